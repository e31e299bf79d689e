-- A new secret for a public link, p_prefix 'twa_' (an appointment link) or
-- 'twcal_' (a calendar feed), and the key that signed it: the prefix and 32 bytes
-- in base64url (43 characters): the key's id (its low byte), 19 random bytes (from
-- pg_strong_random) and the first 12 bytes of HMAC-SHA-256(key, prefix || those 20
-- bytes). The service checks the MAC before it looks anything up (LinkKeys.swift),
-- so a made-up link costs nothing. The signer is the newest key at least ten minutes
-- old (every service reads the keys every five: none meets a link signed with a key
-- it has not read), else the oldest one still in use. Definer: only these functions read
-- the keys.
CREATE OR REPLACE FUNCTION teamwork_signed_secret(p_prefix text) RETURNS TABLE (secret text, key_id integer)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_key  public.link_keys%ROWTYPE;
    v_body bytea;
BEGIN
    IF p_prefix IS NULL OR p_prefix NOT IN ('twa_', 'twcal_') THEN
        RAISE EXCEPTION 'a link is an appointment link (twa_) or a calendar feed (twcal_)' USING ERRCODE = 'TWS01';
    END IF;
    SELECT * INTO v_key FROM public.link_keys k
     WHERE k.retired_at IS NULL OR k.retired_at > now() - interval '10 minutes'
     ORDER BY (k.created_at <= now() - interval '10 minutes') DESC,
              CASE WHEN k.created_at <= now() - interval '10 minutes' THEN k.id END DESC NULLS LAST, k.id
     LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no key to sign links with: run teamwork-manager db migrate' USING ERRCODE = 'TWS01';
    END IF;
    v_body := set_byte('\x00'::bytea, 0, v_key.id % 256)
              || substr(decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'), 1, 19);
    secret := p_prefix || translate(
        encode(v_body || substr(public.teamwork_hmac_sha256(v_key.key, convert_to(p_prefix, 'UTF8') || v_body), 1, 12), 'base64'),
        '+/=', '-_');
    key_id := v_key.id;
    RETURN NEXT;
END
$$;
REVOKE ALL ON FUNCTION teamwork_signed_secret(text) FROM PUBLIC;
