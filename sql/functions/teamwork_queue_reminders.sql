-- Queues the day-before reminders that are due at p_now (the service's clock,
-- which a rehearsal or a test sets): for each appointment still open whose
-- window starts the next day on the task's clock, once it is p_from there
-- (once per appointment sequence; a customer who cancelled, or whom the visit
-- is no longer for, gets none). Links that expired a week ago go too.
-- Called by the service's message sender on each pass; returns how many.
CREATE OR REPLACE FUNCTION teamwork_queue_reminders(p_from time, p_now timestamptz) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    r record;
    v_count integer := 0;
BEGIN
    FOR r IN
        SELECT a.task_id, a.customer_id, a.sequence
          FROM public.appointments a JOIN public.tasks t ON t.id = a.task_id
          LEFT JOIN public.locations l ON l.id = t.location_id
         WHERE t.status IN ('open', 'assigned') AND t.window_start > p_now AND t.window_start < p_now + interval '2 days'
           AND a.answer <> 'cancel' AND COALESCE(t.customer_id, l.customer_id) = a.customer_id
           AND (t.window_start AT TIME ZONE t.time_zone)::date = (p_now AT TIME ZONE t.time_zone)::date + 1
           AND (p_now AT TIME ZONE t.time_zone)::time >= p_from
           AND NOT EXISTS (SELECT 1 FROM public.customer_messages m
                            WHERE m.task_id = a.task_id AND m.kind = 'reminder' AND m.sequence = a.sequence)
         ORDER BY t.window_start, a.task_id
    LOOP
        PERFORM public.teamwork_queue_customer_message(r.task_id, r.customer_id, 'reminder', r.sequence, NULL);
        v_count := v_count + 1;
    END LOOP;
    DELETE FROM public.appointment_links WHERE expires_at < now() - interval '7 days';
    RETURN v_count;
END
$$;
