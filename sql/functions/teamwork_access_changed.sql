-- Tells the sync endpoints that who may read what can have changed (a token
-- revoked, a membership, a person or a team changed; the triggers are in
-- migration 0012): they forget what they remembered of tokens and teams
-- (SyncServer's AccessCache). A constant payload: PostgreSQL folds a
-- transaction's notifications into one.
CREATE OR REPLACE FUNCTION teamwork_access_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    PERFORM pg_notify('teamwork_access', '');
    RETURN NULL;
END
$$;
