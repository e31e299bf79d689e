-- Gives person p_person a calendar feed, replacing any they had, as the acting
-- manager (teamwork_actor_id): a secret signed with the service's link key
-- (teamwork_signed_secret), kept hashed with the key that signed it, so the key
-- checks the feed for as long as it lives. Returns the secret, shown once.
-- Refused (TWS02) for an unknown person.
CREATE OR REPLACE FUNCTION teamwork_issue_calendar_feed(p_person bigint) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_signed record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM public.people p WHERE p.id = p_person) THEN
        RAISE EXCEPTION 'no person %', p_person USING ERRCODE = 'TWS02';
    END IF;
    SELECT * INTO v_signed FROM public.teamwork_signed_secret('twcal_');
    INSERT INTO public.calendar_feeds AS f (person_id, secret_hash, created_by, signed, key_id)
    VALUES (p_person, sha256(convert_to(v_signed.secret, 'UTF8')), public.teamwork_actor_id(), true, v_signed.key_id)
    ON CONFLICT (person_id) DO UPDATE SET secret_hash = excluded.secret_hash, created_by = excluded.created_by,
                                          created_at = now(), signed = true, key_id = excluded.key_id;
    RETURN v_signed.secret;
END
$$;
REVOKE ALL ON FUNCTION teamwork_issue_calendar_feed(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_issue_calendar_feed(bigint) TO teamwork_manager;
