-- What a job cost reaches billing (issue 53, docs/integrations.md): task.completed
-- carries the materials used and their totals, and a subscription may ask for
-- task.costed alone (sent when a task is completed, with the same lines).
ALTER TABLE webhook_subscriptions DROP CONSTRAINT webhook_subscriptions_events_check;
ALTER TABLE webhook_subscriptions ADD CONSTRAINT webhook_subscriptions_events_check
    CHECK (cardinality(events) BETWEEN 1 AND 20 AND events <@ ARRAY[
        'task.created', 'task.assigned', 'task.started', 'task.completed', 'task.cancelled', 'task.rescheduled',
        'attachment.added', 'checklist.completed', 'appointment.confirmed', 'appointment.moved',
        'appointment.cancelled', 'task.costed']::text[]);

-- The body lives in sql/functions/teamwork_task_costs.sql.
CREATE FUNCTION teamwork_task_costs(bigint) RETURNS jsonb LANGUAGE sql AS $$ SELECT NULL::jsonb $$;
