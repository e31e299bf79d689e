-- HMAC-SHA-256 (RFC 2104) of p_message under p_key, from PostgreSQL's own sha256():
-- what the service's swift-crypto HMAC<SHA256> computes (a test holds them to RFC
-- 4231's vectors). Only teamwork_link_secret uses it.
CREATE OR REPLACE FUNCTION teamwork_hmac_sha256(p_key bytea, p_message bytea) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_key   bytea := p_key;
    v_inner bytea;
    v_outer bytea;
BEGIN
    IF octet_length(v_key) > 64 THEN
        v_key := sha256(v_key);
    END IF;
    v_key := v_key || decode(repeat('00', 64 - octet_length(v_key)), 'hex');
    v_inner := v_key;
    v_outer := v_key;
    FOR i IN 0..63 LOOP
        v_inner := set_byte(v_inner, i, get_byte(v_key, i) # 54);
        v_outer := set_byte(v_outer, i, get_byte(v_key, i) # 92);
    END LOOP;
    RETURN sha256(v_outer || sha256(v_inner || p_message));
END
$$;
