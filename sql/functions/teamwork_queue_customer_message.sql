-- Queues one message of p_kind to customer p_customer about task p_task, once per
-- task, kind, sequence, channel and customer: an email when they have an address,
-- an SMS when they have a number. A customer who has not agreed to messages, or
-- has neither, gets a row that says so (state skipped), for the dispatcher to see
-- why nothing went. An erased customer gets nothing.
CREATE OR REPLACE FUNCTION teamwork_queue_customer_message(
    p_task bigint, p_customer bigint, p_kind text, p_sequence integer, p_after bigint
) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    c public.customers;
BEGIN
    SELECT * INTO c FROM public.customers WHERE id = p_customer;
    IF NOT FOUND OR c.erased_at IS NOT NULL THEN
        RETURN;
    END IF;
    INSERT INTO public.customer_messages (task_id, customer_id, kind, sequence, channel, after_task_id, state, reason)
    SELECT p_task, p_customer, p_kind, p_sequence, ch.channel, p_after,
           CASE WHEN c.consent AND ch.address IS NOT NULL THEN 'pending' ELSE 'skipped' END,
           CASE WHEN ch.address IS NULL THEN 'the customer has no email address or phone number'
                WHEN NOT c.consent THEN 'the customer has not agreed to messages' END
      FROM (VALUES ('email', c.email), ('sms', c.phone)) AS ch (channel, address)
     WHERE ch.address IS NOT NULL OR (ch.channel = 'email' AND c.phone IS NULL)
    ON CONFLICT DO NOTHING;
    PERFORM pg_notify('teamwork_outbox', '');
END
$$;
