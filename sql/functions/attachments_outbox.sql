-- attachment.added (docs/integrations.md): a photo, document or signature the
-- master took from a worker, in the same transaction.
CREATE OR REPLACE FUNCTION attachments_outbox() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM public.webhook_subscriptions s WHERE 'attachment.added' = ANY (s.events)) THEN
        RETURN NULL;
    END IF;
    PERFORM public.teamwork_outbox_add('attachment.added', n.task_id, jsonb_build_object(
                'id', n.id, 'task_id', n.task_id, 'person_id', n.person_id, 'item', n.item, 'sha256', n.sha256,
                'size', n.size, 'media_type', n.media_type, 'signer', n.signer, 'captured_at', n.captured_at))
       FROM (SELECT * FROM new_rows ORDER BY id) n;
    RETURN NULL;
END
$$;
