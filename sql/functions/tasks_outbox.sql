-- The outbox's task events (docs/integrations.md), once per statement, in the
-- same transaction as the change: task.created (and task.assigned when made
-- with an assignee), task.assigned, task.started,
-- task.completed (and checklist.completed when it has a checklist, and task.costed), task.cancelled,
-- task.rescheduled (window or due time moved).
-- Each event gets one delivery per subscription that wants it (a paused one's
-- wait for it to resume). Nothing is written while there is no subscription at
-- all, so the listener's bulk paths pay one probe. SECURITY DEFINER: the tools'
-- roles cannot write events or deliveries themselves.
CREATE OR REPLACE FUNCTION tasks_outbox() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM public.webhook_subscriptions) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        WITH added AS (
            INSERT INTO public.outbox_events (event, task_id, payload)
            SELECT ev.event, n.id, public.teamwork_outbox_payload(ev.event, to_jsonb(n))
              FROM new_rows n,
                   LATERAL (VALUES ('task.created', true), ('task.assigned', n.assignee_id IS NOT NULL)) AS ev (event, yes)
             WHERE ev.yes ORDER BY n.id, ev.event DESC
            RETURNING id, event
        )
        INSERT INTO public.webhook_deliveries (event_id, subscription_id)
        SELECT a.id, s.id FROM added a JOIN public.webhook_subscriptions s ON a.event = ANY (s.events);
    ELSE
        WITH happened AS (
            SELECT n.id, ev.event, to_jsonb(n) AS task
              FROM new_rows n JOIN old_rows o ON o.id = n.id,
                   LATERAL (VALUES
                       ('task.assigned', n.assignee_id IS NOT NULL AND n.assignee_id IS DISTINCT FROM o.assignee_id),
                       ('task.started', n.status = 'in_progress' AND o.status <> 'in_progress'),
                       ('task.completed', n.status = 'completed' AND o.status <> 'completed'),
                       ('task.costed', n.status = 'completed' AND o.status <> 'completed'),
                       ('checklist.completed',
                        n.status = 'completed' AND o.status <> 'completed' AND n.checklist_id IS NOT NULL),
                       ('task.cancelled', n.status = 'cancelled' AND o.status <> 'cancelled'),
                       ('task.rescheduled', (n.window_start, n.window_end, n.due_at)
                                            IS DISTINCT FROM (o.window_start, o.window_end, o.due_at))
                   ) AS ev (event, yes)
             -- What a job cost is read only for a subscription that asked for it.
             WHERE ev.yes AND (ev.event <> 'task.costed'
                               OR EXISTS (SELECT 1 FROM public.webhook_subscriptions s WHERE 'task.costed' = ANY (s.events)))
        ), added AS (
            INSERT INTO public.outbox_events (event, task_id, payload)
            SELECT h.event, h.id, public.teamwork_outbox_payload(h.event, h.task) FROM happened h ORDER BY h.id, h.event
            RETURNING id, event
        )
        INSERT INTO public.webhook_deliveries (event_id, subscription_id)
        SELECT a.id, s.id FROM added a JOIN public.webhook_subscriptions s ON a.event = ANY (s.events);
    END IF;
    PERFORM pg_notify('teamwork_outbox', '');
    RETURN NULL;
END
$$;
