-- The day a task's customer messages belong to (migration 0032): its window's
-- start, else its due time, on the task's own clock; NULL for neither.
CREATE OR REPLACE FUNCTION teamwork_message_day(p_task bigint) RETURNS date
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT (coalesce(t.window_start, t.due_at) AT TIME ZONE t.time_zone)::date FROM public.tasks t WHERE t.id = p_task
$$;
REVOKE ALL ON FUNCTION teamwork_message_day(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_message_day(bigint) TO teamwork_manager, teamwork_service;
