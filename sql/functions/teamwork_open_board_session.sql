-- Signs a dispatcher in to the board with their access token's secret: the
-- person is the token's, never a value the caller names. Outcomes: 'signed_in'
-- (a session stored under the SHA-256 of `p_session_secret`, with its CSRF
-- token, for `p_seconds`), 'unknown' (no such live token, its person left, or it is a
-- phone's, made by pairing),
-- 'not_a_manager' (a worker's token). A person holds at most 20 sessions: the
-- oldest end first. Expired sessions are deleted on the way.
CREATE OR REPLACE FUNCTION teamwork_open_board_session(p_token text, p_session_secret text, p_csrf text, p_seconds integer)
RETURNS TABLE (outcome text, person_id bigint, expires_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_token bigint;
    v_person bigint;
    v_role text;
    v_expires timestamptz;
BEGIN
    IF p_seconds IS NULL OR p_seconds < 60 OR p_seconds > 7 * 86400 THEN
        RAISE EXCEPTION 'a board session lasts between a minute and a week' USING ERRCODE = '22023';
    END IF;
    IF p_session_secret IS NULL OR length(p_session_secret) <> 43 THEN
        RAISE EXCEPTION 'a session secret is 43 characters' USING ERRCODE = '22023';
    END IF;
    DELETE FROM public.board_sessions s WHERE s.expires_at < now();
    SELECT a.id, p.id, p.role INTO v_token, v_person, v_role
    FROM public.access_tokens a JOIN public.people p ON p.id = a.person_id
    WHERE a.token_hash = sha256(convert_to(p_token, 'UTF8')) AND a.revoked_at IS NULL AND p.deactivated_at IS NULL
      -- A phone's token (made by pairing) signs in the phone app only, never the board.
      AND NOT EXISTS (SELECT 1 FROM public.device_pairings d WHERE d.token_id = a.id);
    IF v_token IS NULL THEN
        RETURN QUERY SELECT 'unknown'::text, NULL::bigint, NULL::timestamptz;
        RETURN;
    END IF;
    IF v_role NOT IN ('manager', 'admin') THEN
        RETURN QUERY SELECT 'not_a_manager'::text, v_person, NULL::timestamptz;
        RETURN;
    END IF;
    -- One sign-in of a person at a time, so their sessions never pass twenty.
    PERFORM pg_advisory_xact_lock(hashtextextended('teamwork_board_sessions:' || v_person, 0));
    DELETE FROM public.board_sessions s WHERE s.secret_hash IN (
        SELECT o.secret_hash FROM public.board_sessions o WHERE o.person_id = v_person
        ORDER BY o.created_at DESC, o.expires_at DESC OFFSET 19
    );
    INSERT INTO public.board_sessions (secret_hash, person_id, token_id, csrf, expires_at)
    VALUES (sha256(convert_to(p_session_secret, 'UTF8')), v_person, v_token, p_csrf, now() + make_interval(secs => p_seconds))
    RETURNING board_sessions.expires_at INTO v_expires;
    RETURN QUERY SELECT 'signed_in'::text, v_person, v_expires;
END
$$;
