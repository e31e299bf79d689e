-- Subscribes p_url to p_events with a new secret made here (whsec_ and 32 bytes
-- from pg_strong_random, as two v4 UUIDs' worth), returned this once: no role but
-- the service reads it again. The acting manager is its creator.
CREATE OR REPLACE FUNCTION teamwork_webhook_add(p_url text, p_events text[], p_description text)
RETURNS TABLE (id bigint, secret text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_secret text := 'whsec_' || encode(decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'), 'base64');
    v_id     bigint;
BEGIN
    INSERT INTO public.webhook_subscriptions (url, events, description, secret, created_by)
    VALUES (p_url, p_events, p_description, v_secret, public.teamwork_actor_id())
    RETURNING webhook_subscriptions.id INTO v_id;
    RETURN QUERY SELECT v_id, v_secret;
END
$$;
