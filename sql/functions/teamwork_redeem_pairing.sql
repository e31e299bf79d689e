-- Redeems a phone's one-time pairing code for an access token of its own: the
-- SHA-256 of `p_secret` is stored under the label `p_label` (the device's name),
-- and the pairing is used up in the same transaction. Returns the person, the new
-- token and the pairing; no row when the code is unknown, used, expired, its person
-- has left or their role is no longer the one the link was made for (the caller
-- says one thing for all of these: nothing to learn by guessing).
CREATE OR REPLACE FUNCTION teamwork_redeem_pairing(p_code text, p_secret text, p_label text)
RETURNS TABLE (person_id bigint, token_id bigint, pairing_id bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_pairing public.device_pairings%ROWTYPE;
    v_token bigint;
BEGIN
    IF p_secret IS NULL OR p_secret !~ '^tw_[A-Za-z0-9_-]{43}$' THEN
        RAISE EXCEPTION 'a token is tw_ and 43 URL-safe characters' USING ERRCODE = 'TWS01';
    END IF;
    IF p_label IS NULL OR length(p_label) NOT BETWEEN 1 AND 60 OR p_label ~ '[[:cntrl:]\u0080-\u009F\u202A-\u202E\u2066-\u2069]' THEN
        RAISE EXCEPTION 'a device''s name is one line of 1 to 60 characters, with no bidirectional controls' USING ERRCODE = 'TWS01';
    END IF;
    IF p_code IS NULL OR p_code !~ '^[A-Za-z0-9_-]{43}$' THEN
        RETURN;
    END IF;
    SELECT * INTO v_pairing FROM public.device_pairings d
     WHERE d.code_hash = sha256(convert_to(p_code, 'UTF8')) FOR UPDATE;
    IF NOT FOUND OR v_pairing.used_at IS NOT NULL OR v_pairing.expires_at <= now() THEN
        RETURN;
    END IF;
    PERFORM 1 FROM public.people p
     WHERE p.id = v_pairing.person_id AND p.deactivated_at IS NULL AND p.role = v_pairing.role FOR SHARE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    INSERT INTO public.access_tokens (person_id, token_hash, label, created_by)
    VALUES (v_pairing.person_id, sha256(convert_to(p_secret, 'UTF8')), p_label, v_pairing.created_by)
    RETURNING id INTO v_token;
    UPDATE public.device_pairings d SET used_at = now(), token_id = v_token WHERE d.id = v_pairing.id;
    RETURN QUERY SELECT v_pairing.person_id, v_token, v_pairing.id;
END
$$;
