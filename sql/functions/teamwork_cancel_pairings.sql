-- Cancels a person's pairing links still good (a link sent to the wrong place):
-- whoever may pair the person may (teamwork_check_token_issuer). Returns how many
-- went.
CREATE OR REPLACE FUNCTION teamwork_cancel_pairings(p_person bigint) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_count integer;
BEGIN
    PERFORM public.teamwork_check_token_issuer(p_person);
    DELETE FROM public.device_pairings WHERE person_id = p_person AND used_at IS NULL AND expires_at > now();
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END
$$;
