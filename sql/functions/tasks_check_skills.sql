-- A task goes only to someone who has every skill it requires. A manager may
-- override that for one transaction by marking it forced with the reason
-- (teamwork_mark; `task assign --force`); tasks_record_changes writes the reason into the
-- history entry. SQLSTATE TWS01 tells the tools it is this refusal.
CREATE OR REPLACE FUNCTION tasks_check_skills() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    missing text[];
    who     text;
BEGIN
    IF NEW.assignee_id IS NULL OR cardinality(NEW.required_skills) = 0 THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.assignee_id IS NOT DISTINCT FROM OLD.assignee_id
       AND NEW.required_skills IS NOT DISTINCT FROM OLD.required_skills THEN
        RETURN NEW;
    END IF;
    SELECT array_agg(s ORDER BY s), min(p.first_name || ' ' || p.last_name)
      INTO missing, who
      FROM unnest(NEW.required_skills) s
      JOIN public.people p ON p.id = NEW.assignee_id
     WHERE NOT s = ANY (p.skills);
    IF missing IS NOT NULL AND public.teamwork_marked('forced') IS NULL THEN
        -- A new task's id is not named: the rolled-back insert consumed it, and no task has it.
        -- The hint marks a rule a manager may override (each tool says how: --force, "assign anyway").
        RAISE EXCEPTION '% needs % which % does not have',
            CASE WHEN TG_OP = 'INSERT' THEN 'the new task' ELSE 'task ' || NEW.id END, array_to_string(missing, ', '), who
            USING ERRCODE = 'TWS01', HINT = 'overridable';
    END IF;
    RETURN NEW;
END
$$;
