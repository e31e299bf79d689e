-- Issues an access token for a person: stores the SHA-256 of `p_secret` (the
-- tool shows the secret once) and returns the token's id. Who may is
-- teamwork_check_token_issuer's rule (which locks the person first, so a
-- deactivation in flight either comes after and revokes this token, or before
-- and this is refused).
CREATE OR REPLACE FUNCTION teamwork_issue_token(p_person bigint, p_secret text, p_label text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_id bigint;
BEGIN
    IF p_secret IS NULL OR p_secret !~ '^tw_[A-Za-z0-9_-]{43}$' THEN
        RAISE EXCEPTION 'a token is tw_ and 43 URL-safe characters' USING ERRCODE = 'TWS01';
    END IF;
    PERFORM public.teamwork_check_token_issuer(p_person);
    INSERT INTO public.access_tokens (person_id, token_hash, label, created_by)
    VALUES (p_person, sha256(convert_to(p_secret, 'UTF8')), coalesce(p_label, ''), public.teamwork_actor_id())
    RETURNING id INTO v_id;
    RETURN v_id;
END
$$;
