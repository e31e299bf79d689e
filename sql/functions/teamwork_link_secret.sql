-- A new secret for a public link, p_prefix 'twa_' (an appointment link) or
-- 'twcal_' (a calendar feed): the prefix and 32 bytes in base64url (43
-- characters): the signing key's id (its low byte), 19 random bytes (from
-- pg_strong_random) and the first 12 bytes of HMAC-SHA-256(key, prefix || those
-- 20 bytes), made with the newest key. The service checks the MAC before it looks
-- anything up (LinkKeys.swift), so a made-up link costs nothing. Definer: only
-- these functions read the keys.
CREATE OR REPLACE FUNCTION teamwork_link_secret(p_prefix text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_key  public.link_keys%ROWTYPE;
    v_body bytea;
BEGIN
    IF p_prefix IS NULL OR p_prefix NOT IN ('twa_', 'twcal_') THEN
        RAISE EXCEPTION 'a link is an appointment link (twa_) or a calendar feed (twcal_)' USING ERRCODE = 'TWS01';
    END IF;
    SELECT * INTO v_key FROM public.link_keys k WHERE k.retired_at IS NULL ORDER BY k.id DESC LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no key to sign links with: run teamwork-manager db migrate' USING ERRCODE = 'TWS01';
    END IF;
    v_body := set_byte('\x00'::bytea, 0, v_key.id % 256)
              || substr(decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'), 1, 19);
    RETURN p_prefix || translate(
        encode(v_body || substr(public.teamwork_hmac_sha256(v_key.key, convert_to(p_prefix, 'UTF8') || v_body), 1, 12), 'base64'),
        '+/=', '-_');
END
$$;
REVOKE ALL ON FUNCTION teamwork_link_secret(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_link_secret(text) TO teamwork_manager, teamwork_service;
