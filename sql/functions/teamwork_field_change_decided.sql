-- Sends a dismissed conflict (a change the master did not take, set aside with a
-- reason for the worker) to the replica the change came from (migration 0031): a 'refusal' feed entry for its ledger row,
-- routed as teamwork_set_aside_field_change routes one. Definer: the manager who
-- decides may not append to the feed.
CREATE OR REPLACE FUNCTION teamwork_field_change_decided() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    PERFORM public.teamwork_feed_append('refusal', NEW.id, 'update',
        CASE WHEN NEW.replica ~ '^team-[0-9]+$' THEN substr(NEW.replica, 6)::bigint END, NULL,
        CASE WHEN NEW.replica ~ '^person-[0-9]+$' THEN substr(NEW.replica, 8)::bigint END, NULL);
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION teamwork_field_change_decided() FROM PUBLIC;
