-- A phone signing out: revokes the token whose secret it holds (the phone's own;
-- taking access away never grants any). True when it was live. A secret that is
-- no live token changes nothing and tells no one: the UPDATE's statement trigger
-- would notify teamwork_access even for no row, and every sync endpoint would
-- reload every live token for a stranger's junk cookie.
CREATE OR REPLACE FUNCTION teamwork_sign_out_device(p_secret text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM public.access_tokens
                    WHERE token_hash = sha256(convert_to(p_secret, 'UTF8')) AND revoked_at IS NULL) THEN
        RETURN false;
    END IF;
    UPDATE public.access_tokens SET revoked_at = now()
     WHERE token_hash = sha256(convert_to(p_secret, 'UTF8')) AND revoked_at IS NULL;
    RETURN FOUND;
END
$$;
