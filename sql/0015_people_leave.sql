-- People leave: a person is deactivated, not removed, so every task and
-- history entry keeps their name. An inactive person signs in nowhere (their
-- tokens are revoked as they are deactivated, and a token of theirs is
-- refused whatever its state), is no candidate for `suggest`, and no task can
-- be given to them (tasks_check_assignee_active). A change of it tells the
-- sync endpoints at once, as a revoked token does.
ALTER TABLE people ADD COLUMN deactivated_at timestamptz;

DROP TRIGGER people_access_changed ON people;
CREATE TRIGGER people_access_changed AFTER UPDATE OF first_name, last_name, role, deactivated_at OR DELETE ON people
    FOR EACH STATEMENT EXECUTE FUNCTION teamwork_access_changed();

-- The body lives in sql/functions/tasks_check_assignee_active.sql.
CREATE FUNCTION tasks_check_assignee_active() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER tasks_check_assignee_active BEFORE INSERT OR UPDATE OF assignee_id ON tasks
    FOR EACH ROW EXECUTE FUNCTION tasks_check_assignee_active();
