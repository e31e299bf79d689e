-- Sets person p_person's entry of kind p_kind on task p_task to the interval
-- p_value (checked first: teamwork_time_problem), from p_source ('worker': the field
-- change p_change; 'manager': a correction) recorded at p_at. It replaces an
-- automatic entry; a worker's never replaces a later one ('superseded') nor a
-- manager's correction ('corrected': the dispatcher decides); a manager's always
-- replaces. The same entry again changes nothing ('unchanged': no
-- cost goes to billing again). One function for both writers of an entry; 'set'
-- when it was written.
CREATE OR REPLACE FUNCTION teamwork_set_time_entry(
    p_task bigint, p_person bigint, p_kind text, p_value text, p_source text, p_at timestamptz, p_change text)
RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    e      public.time_entries%ROWTYPE;
    v_from timestamptz := public.teamwork_time_instant(split_part(p_value, '/', 1));
    v_to   timestamptz := public.teamwork_time_instant(split_part(p_value, '/', 2));
    v_rows bigint;
BEGIN
    SELECT * INTO e FROM public.time_entries x
     WHERE x.task_id = p_task AND x.person_id = p_person AND x.kind = p_kind FOR UPDATE;
    IF FOUND AND e.source <> 'auto' AND e.started_at = v_from AND e.ended_at = v_to THEN
        RETURN 'unchanged';
    END IF;
    IF FOUND AND e.source = 'manager' AND p_source = 'worker' THEN
        RETURN 'corrected';
    END IF;
    INSERT INTO public.time_entries AS x (task_id, person_id, kind, started_at, ended_at, source, recorded_at, change_id)
    VALUES (p_task, p_person, p_kind, v_from, v_to, p_source, p_at, p_change)
    ON CONFLICT (task_id, person_id, kind) DO UPDATE
       SET started_at = excluded.started_at, ended_at = excluded.ended_at, source = excluded.source,
           -- Replacing an automatic entry, the writer's own time counts (not the completion's).
           recorded_at = CASE WHEN x.source = 'auto' THEN excluded.recorded_at
                              ELSE greatest(x.recorded_at, excluded.recorded_at) END,
           change_id = excluded.change_id
     WHERE excluded.source = 'manager' OR x.source = 'auto' OR x.recorded_at <= excluded.recorded_at;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    RETURN CASE WHEN v_rows > 0 THEN 'set' ELSE 'superseded' END;
END
$$;
