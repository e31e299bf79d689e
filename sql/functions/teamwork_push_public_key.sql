-- The public half of the service's VAPID key pair, for the sync endpoint to give
-- phones (the one kept, or the one proposed when none is kept yet, as
-- teamwork_push_key): the endpoint, which faces the internet, never holds the
-- private half.
CREATE OR REPLACE FUNCTION teamwork_push_public_key(p_private bytea, p_public bytea) RETURNS bytea
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT k.public_key FROM public.teamwork_push_key(p_private, p_public) k
$$;
REVOKE ALL ON FUNCTION teamwork_push_public_key(bytea, bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_push_public_key(bytea, bytea) TO teamwork_service;
