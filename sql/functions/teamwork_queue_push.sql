-- Queues a push message of p_kind about p_tasks[i] for every subscribed phone of
-- p_people[i] (the two arrays pair up), once: what already waits for a phone is
-- not queued twice, but its generation moves on, so a message being sent as the
-- same news comes again is sent again after (recordPush). Tells the service's senders (teamwork_outbox) when it queued
-- anything. Called by the definer triggers only.
CREATE OR REPLACE FUNCTION teamwork_queue_push(p_kind text, p_people bigint[], p_tasks bigint[]) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    INSERT INTO public.push_messages (token_id, kind, task_id)
    SELECT s.token_id, p_kind, w.task
      FROM unnest(p_people, p_tasks) AS w (person, task)
      JOIN public.push_subscriptions s ON s.person_id = w.person
     WHERE w.task IS NOT NULL
    ON CONFLICT (token_id, kind, task_id) DO UPDATE SET generation = push_messages.generation + 1;
    IF FOUND THEN
        PERFORM pg_notify('teamwork_outbox', '');
    END IF;
END
$$;
REVOKE ALL ON FUNCTION teamwork_queue_push(text, bigint[], bigint[]) FROM PUBLIC;
