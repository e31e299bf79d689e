-- Makes a new key for public links when the newest is at least p_every old (the
-- service asks every so often with 90 days; a manager with 0 to rotate now): new
-- links are signed with it ten minutes on (teamwork_signed_secret), and the one
-- before is retired, still checking links for 31 days, and calendar feeds it signed
-- for as long as they live. True when it rotated.
CREATE OR REPLACE FUNCTION teamwork_rotate_link_key(p_every interval) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    LOCK TABLE public.link_keys IN SHARE ROW EXCLUSIVE MODE;
    IF EXISTS (SELECT 1 FROM public.link_keys k WHERE k.retired_at IS NULL AND k.created_at > now() - p_every) THEN
        RETURN false;
    END IF;
    UPDATE public.link_keys SET retired_at = now() WHERE retired_at IS NULL;
    INSERT INTO public.link_keys (key)
    VALUES (substr(decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'), 1, 32));
    RETURN true;
END
$$;
REVOKE ALL ON FUNCTION teamwork_rotate_link_key(interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_rotate_link_key(interval) TO teamwork_manager, teamwork_service;
