-- One outbox event (docs/integrations.md) and a delivery for each subscription
-- that wants it, in the caller's transaction; nothing when none does. Called by
-- the attachment and appointment paths (the task triggers write theirs set-wise,
-- tasks_outbox.sql) and by what changes a completed task's costs.
--
-- Events that supersede each other merge: a task.costed (which carries as_of)
-- replaces every delivery of an earlier task.costed of the same task that no
-- sender has tried or holds, and an event left with no delivery goes, so a
-- task's costs wait at most once per subscription however often they changed
-- (one push of a thousand time entries is one delivery, the newest).
CREATE OR REPLACE FUNCTION teamwork_outbox_add(p_event text, p_task_id bigint, p_data jsonb) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_id bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM public.webhook_subscriptions s WHERE p_event = ANY (s.events)) THEN
        RETURN;
    END IF;
    IF p_event = 'task.costed' THEN
        -- (The statement sees the deliveries as they were before it: those it removes are told apart by id.)
        WITH gone AS (
            DELETE FROM public.webhook_deliveries d USING public.outbox_events e
             WHERE e.id = d.event_id AND e.event = 'task.costed' AND e.task_id = p_task_id
               AND d.state = 'pending' AND d.attempts = 0 AND d.next_attempt_at <= now()
            RETURNING d.id, d.event_id
        )
        DELETE FROM public.outbox_events e
         WHERE e.id IN (SELECT g.event_id FROM gone g)
           AND NOT EXISTS (SELECT 1 FROM public.webhook_deliveries d
                            WHERE d.event_id = e.id AND d.id NOT IN (SELECT g.id FROM gone g));
    END IF;
    INSERT INTO public.outbox_events (event, task_id, payload)
    VALUES (p_event, p_task_id, jsonb_build_object(
        'type', p_event,
        'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'data', p_data))
    RETURNING id INTO v_id;
    INSERT INTO public.webhook_deliveries (event_id, subscription_id)
    SELECT v_id, s.id FROM public.webhook_subscriptions s WHERE p_event = ANY (s.events);
    PERFORM pg_notify('teamwork_outbox', '');
END
$$;
