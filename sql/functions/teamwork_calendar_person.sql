-- The person whose calendar feed `p_secret` opens, if the feed is live and the
-- person active; NULL otherwise.
CREATE OR REPLACE FUNCTION teamwork_calendar_person(p_secret text) RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT f.person_id FROM public.calendar_feeds f JOIN public.people p ON p.id = f.person_id
     WHERE f.secret_hash = sha256(convert_to(p_secret, 'UTF8')) AND p.deactivated_at IS NULL
$$;
