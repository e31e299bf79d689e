-- Records that the tokens with these SHA-256s (hex) were used: at most once a
-- minute each, so a busy device does not turn every request into a write. Never
-- waits for a row another transaction holds (that use is simply not recorded
-- this time): the sync endpoint calls it on the connection that hears of
-- revocations, which PostgreSQL delivers only while it is idle. In id order, so
-- two servers recording at once cannot deadlock. Returns how many were recorded.
CREATE OR REPLACE FUNCTION teamwork_record_token_use(p_digests text[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_count integer;
BEGIN
    UPDATE public.access_tokens SET last_used_at = now()
    WHERE id IN (
        SELECT a.id FROM public.access_tokens a
        WHERE a.token_hash = ANY (SELECT decode(d, 'hex') FROM unnest(p_digests) AS d WHERE d ~ '^[0-9a-f]{64}$')
          AND a.revoked_at IS NULL AND (a.last_used_at IS NULL OR a.last_used_at < now() - interval '1 minute')
        ORDER BY a.id FOR UPDATE SKIP LOCKED
    );
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END
$$;
