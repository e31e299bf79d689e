-- Least-privilege roles. They are group roles (NOLOGIN): an administrator grants
-- them to login roles, e.g. GRANT teamwork_manager TO alice;
-- Roles are cluster-wide, so they are created only when missing. Migrating
-- needs CREATEROLE unless an administrator made both roles beforehand.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'teamwork_manager') THEN
    BEGIN
        CREATE ROLE teamwork_manager NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL; -- made concurrently by the migration of another database
    END;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'teamwork_service') THEN
    BEGIN
        CREATE ROLE teamwork_service NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL;
    END;
    END IF;
END
$$;

-- Managers: full control of the common data and the master task list; history
-- and the feed are read-only to them (the triggers write both).
GRANT SELECT, INSERT, UPDATE, DELETE ON people, teams, team_memberships, locations, tasks TO teamwork_manager;
GRANT SELECT ON task_history, change_feed, schema_migrations TO teamwork_manager;

-- The service: reads everything it replicates, follows the feed, and writes only
-- the fields that work in the field changes.
GRANT SELECT ON people, teams, team_memberships, locations, tasks, task_history, change_feed TO teamwork_service;
GRANT UPDATE (status, assignee_id, started_at, completed_at, completed_by, completion_note) ON tasks TO teamwork_service;
GRANT UPDATE (last_seen_at) ON people TO teamwork_service;
