-- Ends the push subscription of the phone whose token's secret is p_secret (the
-- worker turned notifications off). True when there was one.
CREATE OR REPLACE FUNCTION teamwork_remove_push_subscription(p_secret text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    DELETE FROM public.push_subscriptions s USING public.access_tokens a
     WHERE s.token_id = a.id AND a.token_hash = sha256(convert_to(p_secret, 'UTF8'));
    RETURN FOUND;
END
$$;
REVOKE ALL ON FUNCTION teamwork_remove_push_subscription(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_remove_push_subscription(text) TO teamwork_service;
