-- A new secret for webhook p_id, made here and returned once (NULL: no such
-- webhook); the old one still signs beside it for p_overlap. Who rotated it, and when,
-- is kept on the webhook (sql/0044).
CREATE OR REPLACE FUNCTION teamwork_webhook_rotate(p_id bigint, p_overlap interval) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_secret text := 'whsec_' || encode(decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'), 'base64');
BEGIN
    IF p_overlap IS NULL OR p_overlap < interval '0' OR p_overlap > interval '30 days' THEN
        RAISE EXCEPTION 'an overlap is 0 to 30 days' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE public.webhook_subscriptions
       SET previous_secret = secret, secret = v_secret, previous_until = now() + p_overlap,
           rotated_at = now(), rotated_by = public.teamwork_actor_id()
     WHERE id = p_id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    RETURN v_secret;
END
$$;
