-- Whose phone pairing code p_code would pair, before anything is redeemed (the
-- pairing page names them, so a forwarded link is seen for what it is): their
-- name while the code is live (unused, unexpired, its person active in the role
-- the link was made for, as teamwork_redeem_pairing asks); no row otherwise.
CREATE OR REPLACE FUNCTION teamwork_pairing_person(p_code text) RETURNS TABLE (first_name text, last_name text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT p.first_name, p.last_name
      FROM public.device_pairings d JOIN public.people p ON p.id = d.person_id
     WHERE p_code ~ '^[A-Za-z0-9_-]{43}$' AND d.code_hash = sha256(convert_to(p_code, 'UTF8'))
       AND d.used_at IS NULL AND d.expires_at > now() AND p.deactivated_at IS NULL AND p.role = d.role
$$;
REVOKE ALL ON FUNCTION teamwork_pairing_person(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_pairing_person(text) TO teamwork_service;
