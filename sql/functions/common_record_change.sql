-- Common data changes go to the feed too, so replicas of people, teams,
-- memberships, locations and parts can follow the same position.
CREATE OR REPLACE FUNCTION common_record_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    op text := lower(TG_OP);
    r record;
BEGIN
    IF TG_OP = 'UPDATE' AND to_jsonb(NEW) - 'updated_at' - 'last_seen_at' = to_jsonb(OLD) - 'updated_at' - 'last_seen_at' THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
    IF TG_TABLE_NAME = 'team_memberships' THEN
        PERFORM public.teamwork_feed_append('membership', r.person_id, op, r.team_id, NULL, NULL, NULL);
    ELSIF TG_TABLE_NAME = 'people' THEN
        PERFORM public.teamwork_feed_append('person', r.id, op, NULL, NULL, NULL, NULL);
    ELSIF TG_TABLE_NAME = 'teams' THEN
        PERFORM public.teamwork_feed_append('team', r.id, op, r.id, NULL, NULL, NULL);
    ELSIF TG_TABLE_NAME = 'parts' THEN
        PERFORM public.teamwork_feed_append('part', r.id, op, NULL, NULL, NULL, NULL);
    ELSE
        PERFORM public.teamwork_feed_append('location', r.id, op, NULL, NULL, NULL, NULL);
    END IF;
    RETURN NULL;
END
$$;
