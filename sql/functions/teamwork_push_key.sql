-- The service's VAPID key pair (Web Push, RFC 8292): the one kept, or the one
-- given when none is kept yet (the first service to start makes it; every host
-- then signs with the same key, which phones subscribed with). Only the service
-- calls it: nobody reads push_keys but this definer.
CREATE OR REPLACE FUNCTION teamwork_push_key(p_private bytea, p_public bytea)
RETURNS TABLE (private_key bytea, public_key bytea)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    INSERT INTO public.push_keys (private_key, public_key) VALUES (p_private, p_public) ON CONFLICT (only_one) DO NOTHING;
    RETURN QUERY SELECT k.private_key, k.public_key FROM public.push_keys k;
END
$$;
REVOKE ALL ON FUNCTION teamwork_push_key(bytea, bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_push_key(bytea, bytea) TO teamwork_service;
