-- Queues one message of p_kind to customer p_customer about task p_task, once per
-- task, kind, sequence, channel and customer: an email when they have an address,
-- an SMS when they have a number. A customer who has not agreed to messages, or
-- has neither, gets a row that says so (state skipped), for the dispatcher to see
-- why nothing went. An erased customer gets nothing. A message about a task on a
-- held day (message_holds, migration 0032) is queued 'held'; in a transaction
-- marked 'hold_messages' (an import that holds its messages) the task's day and
-- team are held first.
CREATE OR REPLACE FUNCTION teamwork_queue_customer_message(
    p_task bigint, p_customer bigint, p_kind text, p_sequence integer, p_after bigint
) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    c public.customers;
    v_day date := public.teamwork_message_day(p_task);
    v_team bigint := (SELECT t.team_id FROM public.tasks t WHERE t.id = p_task);
    v_held boolean;
BEGIN
    SELECT * INTO c FROM public.customers WHERE id = p_customer;
    IF NOT FOUND OR c.erased_at IS NOT NULL THEN
        RETURN;
    END IF;
    -- (A personal task's day is not held by an import: a hold without a team holds every team's.)
    IF v_day IS NOT NULL AND v_team IS NOT NULL AND public.teamwork_marked('hold_messages') IS NOT NULL THEN
        INSERT INTO public.message_holds (day, team_id, note, created_by)
        VALUES (v_day, v_team, public.teamwork_marked('hold_messages'), public.teamwork_actor_id()) ON CONFLICT DO NOTHING;
    END IF;
    v_held := v_day IS NOT NULL AND EXISTS (
        SELECT 1 FROM public.message_holds h WHERE h.day = v_day AND (h.team_id IS NULL OR h.team_id = v_team));
    INSERT INTO public.customer_messages (task_id, customer_id, kind, sequence, channel, after_task_id, state, reason)
    SELECT p_task, p_customer, p_kind, p_sequence, ch.channel, p_after,
           CASE WHEN NOT c.consent OR ch.address IS NULL THEN 'skipped' WHEN v_held THEN 'held' ELSE 'pending' END,
           CASE WHEN ch.address IS NULL THEN 'the customer has no email address or phone number'
                WHEN NOT c.consent THEN 'the customer has not agreed to messages'
                WHEN v_held THEN 'held for ' || v_day || ': the dispatcher releases the day' END
      FROM (VALUES ('email', c.email), ('sms', c.phone)) AS ch (channel, address)
     WHERE ch.address IS NOT NULL OR (ch.channel = 'email' AND c.phone IS NULL)
    ON CONFLICT DO NOTHING;
    PERFORM pg_notify('teamwork_outbox', '');
END
$$;
