-- Starts pairing a phone for `p_person`: stores the SHA-256 of the one-time code
-- `p_code` (the tool shows the link once), good for `p_minutes` (1 to 60).
-- Whoever may issue the person a token may pair their phone
-- (teamwork_check_token_issuer). Returns the pairing's id.
CREATE OR REPLACE FUNCTION teamwork_pair_device(p_person bigint, p_code text, p_minutes integer) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_id bigint;
BEGIN
    IF p_code IS NULL OR p_code !~ '^[A-Za-z0-9_-]{43}$' THEN
        RAISE EXCEPTION 'a pairing code is 43 URL-safe characters' USING ERRCODE = 'TWS01';
    END IF;
    IF p_minutes IS NULL OR p_minutes NOT BETWEEN 1 AND 60 THEN
        RAISE EXCEPTION 'a pairing lasts 1 to 60 minutes' USING ERRCODE = 'TWS01';
    END IF;
    PERFORM public.teamwork_check_token_issuer(p_person);
    INSERT INTO public.device_pairings (person_id, role, code_hash, created_by, expires_at)
    SELECT p.id, p.role, sha256(convert_to(p_code, 'UTF8')), public.teamwork_actor_id(), now() + make_interval(mins => p_minutes)
      FROM public.people p WHERE p.id = p_person
    RETURNING id INTO v_id;
    RETURN v_id;
END
$$;
