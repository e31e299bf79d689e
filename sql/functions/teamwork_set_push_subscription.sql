-- Keeps the push subscription of the phone whose token's secret is p_secret (one
-- per token: a new one replaces it, and what waited for the old endpoint goes to
-- the new). True when the token is live and its person active; false changes
-- nothing. Who the phone is comes from its token here, never from the request.
CREATE OR REPLACE FUNCTION teamwork_set_push_subscription(p_secret text, p_endpoint text, p_p256dh bytea, p_auth bytea)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_token bigint;
    v_person bigint;
BEGIN
    SELECT a.id, a.person_id INTO v_token, v_person
      FROM public.access_tokens a JOIN public.people p ON p.id = a.person_id
     WHERE a.token_hash = sha256(convert_to(p_secret, 'UTF8')) AND a.revoked_at IS NULL AND p.deactivated_at IS NULL
       -- A revocation committing meanwhile waits for this, and its trigger then ends what was kept.
       FOR SHARE OF a;
    IF v_token IS NULL THEN
        RETURN false;
    END IF;
    INSERT INTO public.push_subscriptions (token_id, person_id, endpoint, p256dh, auth)
    VALUES (v_token, v_person, p_endpoint, p_p256dh, p_auth)
    ON CONFLICT (token_id) DO UPDATE
       SET endpoint = EXCLUDED.endpoint, p256dh = EXCLUDED.p256dh, auth = EXCLUDED.auth, created_at = now();
    RETURN true;
END
$$;
REVOKE ALL ON FUNCTION teamwork_set_push_subscription(text, text, bytea, bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_set_push_subscription(text, text, bytea, bytea) TO teamwork_service;
