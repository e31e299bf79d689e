-- A revoked token's push subscription ends with it (a phone signed out, revoked
-- by a manager, or its person gone): nothing more is sent to that phone.
CREATE OR REPLACE FUNCTION access_tokens_end_push() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    DELETE FROM public.push_subscriptions WHERE token_id = NEW.id;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION access_tokens_end_push() FROM PUBLIC;
