-- The open board session a cookie's secret names: not expired, opened with a
-- live token of the session's own person, who is active and still a manager or
-- an admin. No row otherwise. Only the secret's holder can read a session's
-- CSRF token.
CREATE OR REPLACE FUNCTION teamwork_board_session(p_secret text)
RETURNS TABLE (person_id bigint, csrf text, expires_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT s.person_id, s.csrf, s.expires_at
    FROM public.board_sessions s
    JOIN public.access_tokens a ON a.id = s.token_id AND a.person_id = s.person_id
    JOIN public.people p ON p.id = s.person_id
    WHERE s.secret_hash = sha256(convert_to(p_secret, 'UTF8')) AND s.expires_at > now()
      AND a.revoked_at IS NULL AND p.deactivated_at IS NULL AND p.role IN ('manager', 'admin')
$$;
