-- Least-privilege roles. They are group roles (NOLOGIN): an administrator grants
-- them to login roles, e.g. GRANT teamwork_manager TO alice;
-- Roles are cluster-wide, so they are created only when missing.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'teamwork_manager') THEN
        CREATE ROLE teamwork_manager NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'teamwork_service') THEN
        CREATE ROLE teamwork_service NOLOGIN;
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
