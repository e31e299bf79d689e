-- Whether an automatic entry (kept by a worker's own start and completion,
-- tasks_time_entries) of person p_person of kind p_kind on task p_task from p_from
-- to p_to may end there and count, held to the rules a worker's own entry is
-- (teamwork_apply_field_changes_in_replica's `time`): it lasts at most a day, begins
-- at most 31 days (744 hours) before the change that ends it reached the service
-- (teamwork.received_at, which the listener sets per change; now() otherwise), on
-- no day payroll closed (teamwork_time_closed), and overlaps none of the person's
-- other entries (teamwork_time_clash). One that may not stays open, counted
-- nowhere, until the worker or a manager enters the time, however the device
-- dated the start and the completion.
CREATE OR REPLACE FUNCTION teamwork_time_counts(
    p_task bigint, p_person bigint, p_kind text, p_from timestamptz, p_to timestamptz) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT p_to BETWEEN p_from AND p_from + interval '24 hours'
       AND p_from >= coalesce(nullif(current_setting('teamwork.received_at', true), '')::timestamptz, now())
                     - interval '744 hours'
       AND public.teamwork_time_closed(p_task, p_person, p_kind, p_from) IS NULL
       AND public.teamwork_time_clash(p_task, p_person, p_kind, p_from, p_to) IS NULL
$$;
