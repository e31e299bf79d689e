-- A new secret for a public link (teamwork_signed_secret says how it is made and
-- signed), without the key's id: what the appointment links take.
CREATE OR REPLACE FUNCTION teamwork_link_secret(p_prefix text) RETURNS text
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT s.secret FROM public.teamwork_signed_secret(p_prefix) s
$$;
REVOKE ALL ON FUNCTION teamwork_link_secret(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_link_secret(text) TO teamwork_manager, teamwork_service;
