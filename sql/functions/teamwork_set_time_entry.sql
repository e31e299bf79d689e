-- Sets person p_person's entry of kind p_kind on task p_task to the interval
-- p_value (checked first: teamwork_time_problem), from p_source ('worker': the field
-- change p_change; 'manager': a correction) recorded at p_at: it replaces an
-- automatic entry, and a worker's never replaces a later one (false: superseded);
-- a manager's always does. One statement for both writers of an entry.
CREATE OR REPLACE FUNCTION teamwork_set_time_entry(
    p_task bigint, p_person bigint, p_kind text, p_value text, p_source text, p_at timestamptz, p_change text)
RETURNS boolean
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_rows bigint;
BEGIN
    INSERT INTO public.time_entries AS e (task_id, person_id, kind, started_at, ended_at, source, recorded_at, change_id)
    VALUES (p_task, p_person, p_kind, public.teamwork_time_instant(split_part(p_value, '/', 1)),
            public.teamwork_time_instant(split_part(p_value, '/', 2)), p_source, p_at, p_change)
    ON CONFLICT (task_id, person_id, kind) DO UPDATE
       SET started_at = excluded.started_at, ended_at = excluded.ended_at, source = excluded.source,
           recorded_at = greatest(e.recorded_at, excluded.recorded_at), change_id = excluded.change_id
     WHERE excluded.source = 'manager' OR e.source = 'auto' OR e.recorded_at <= excluded.recorded_at;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    RETURN v_rows > 0;
END
$$;
