-- Revokes a token: true when it was live, false when it was already revoked,
-- NULL when there is no such token. Any manager may revoke any token (taking
-- access away never grants any).
CREATE OR REPLACE FUNCTION teamwork_revoke_token(p_id bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    UPDATE public.access_tokens SET revoked_at = now() WHERE id = p_id AND revoked_at IS NULL;
    IF FOUND THEN
        RETURN true;
    END IF;
    RETURN CASE WHEN EXISTS (SELECT 1 FROM public.access_tokens WHERE id = p_id) THEN false END;
END
$$;
