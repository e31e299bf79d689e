-- The keys the service checks public links with: the current one, those retired in
-- the last 31 days (an appointment link lasts at most 30) and those a calendar feed
-- was signed with (a feed lives until it is issued anew), and whether links made
-- before keys existed are still live (an unsigned appointment link not yet expired,
-- an unsigned calendar feed): while one is, a secret whose MAC does not check is
-- still looked up. Only the service reads them (LinkKeys.swift).
CREATE OR REPLACE FUNCTION teamwork_link_keys()
RETURNS TABLE (id integer, key bytea, legacy_appointments boolean, legacy_feeds boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT k.id, k.key,
           EXISTS (SELECT 1 FROM public.appointment_links a WHERE NOT a.signed AND a.expires_at > now()),
           EXISTS (SELECT 1 FROM public.calendar_feeds f WHERE NOT f.signed)
      FROM public.link_keys k
     WHERE k.retired_at IS NULL OR k.retired_at > now() - interval '31 days'
        OR EXISTS (SELECT 1 FROM public.calendar_feeds f WHERE f.key_id = k.id)
     ORDER BY k.id
$$;
REVOKE ALL ON FUNCTION teamwork_link_keys() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_link_keys() TO teamwork_service;
