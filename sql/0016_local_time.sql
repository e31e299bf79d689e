-- Every team works in its own time zone (an IANA name, `Europe/Stockholm`);
-- a site may be in another. Existing teams get UTC. A task's zone is its
-- location's, else its team's, else its assignee's default team's, else UTC;
-- tasks.time_zone keeps it (tasks_time_zone, sql/functions), so replicas and
-- devices read it with the task, and a change of a team's or a site's zone
-- reaches its tasks. Instants stay timestamptz: the zone says how a person
-- reads them and which day is "today" (docs/dispatch.md).
ALTER TABLE teams ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC'
    CHECK (time_zone ~ '^[A-Za-z][A-Za-z0-9_+/-]{0,63}$');
ALTER TABLE locations ADD COLUMN time_zone text
    CHECK (time_zone ~ '^[A-Za-z][A-Za-z0-9_+/-]{0,63}$');
ALTER TABLE tasks ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC';

-- The bodies live in sql/functions/tasks_time_zone.sql.
CREATE FUNCTION teamwork_task_time_zone(bigint, bigint, bigint) RETURNS text LANGUAGE sql STABLE AS $$ SELECT 'UTC' $$;
CREATE FUNCTION tasks_time_zone() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE FUNCTION teamwork_zone_changed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
-- Named to run before tasks_normalize (triggers fire by name), which then counts the change.
CREATE TRIGGER tasks_derive_time_zone BEFORE INSERT OR UPDATE OF team_id, location_id, assignee_id, time_zone ON tasks
    FOR EACH ROW EXECUTE FUNCTION tasks_time_zone();
CREATE TRIGGER teams_zone_changed AFTER UPDATE OF time_zone ON teams
    FOR EACH ROW WHEN (OLD.time_zone IS DISTINCT FROM NEW.time_zone) EXECUTE FUNCTION teamwork_zone_changed();
CREATE TRIGGER locations_zone_changed AFTER UPDATE OF time_zone ON locations
    FOR EACH ROW WHEN (OLD.time_zone IS DISTINCT FROM NEW.time_zone) EXECUTE FUNCTION teamwork_zone_changed();
