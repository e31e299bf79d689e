-- The person a token's secret belongs to, if the token is live and its person
-- active; NULL otherwise. Records the token's use (teamwork_record_token_use).
CREATE OR REPLACE FUNCTION teamwork_authenticate(p_secret text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_hash bytea := sha256(convert_to(p_secret, 'UTF8'));
    v_person bigint;
BEGIN
    SELECT a.person_id INTO v_person FROM public.access_tokens a JOIN public.people p ON p.id = a.person_id
    WHERE a.token_hash = v_hash AND a.revoked_at IS NULL AND p.deactivated_at IS NULL;
    IF v_person IS NOT NULL THEN
        PERFORM public.teamwork_record_token_use(ARRAY[encode(v_hash, 'hex')]);
    END IF;
    RETURN v_person;
END
$$;
