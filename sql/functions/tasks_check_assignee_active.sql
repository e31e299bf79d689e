-- No task is given to someone who has left (people.deactivated_at): a
-- manager's assignment is refused with SQLSTATE TWS01 and words for people.
-- The listener's own writes (a claim pushed before the person left) are left
-- to the listener's rules, so that no field change can hold a batch back.
CREATE OR REPLACE FUNCTION tasks_check_assignee_active() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    who text;
BEGIN
    IF NEW.assignee_id IS NULL
       OR (TG_OP = 'UPDATE' AND NEW.assignee_id IS NOT DISTINCT FROM OLD.assignee_id)
       OR coalesce(current_setting('teamwork.field_change', true), '') <> ''
       OR coalesce(current_setting('teamwork.field_changes', true), '') <> '' THEN
        RETURN NEW;
    END IF;
    SELECT p.first_name || ' ' || p.last_name INTO who
      FROM public.people p WHERE p.id = NEW.assignee_id AND p.deactivated_at IS NOT NULL FOR SHARE;
    IF who IS NOT NULL THEN
        RAISE EXCEPTION '% is no longer active (deactivated): give the task to someone else, or reactivate them first', who
            USING ERRCODE = 'TWS01';
    END IF;
    RETURN NEW;
END
$$;
