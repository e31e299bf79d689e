-- What a plan row may hold, whoever writes it (the tools check the same), and
-- time zones the database knows: a bad row is refused where it is written,
-- not found later by every pass that reads it. The zone check's body lives
-- in sql/functions/tasks_time_zone.sql.
ALTER TABLE plans ADD CONSTRAINT plans_window_start_check CHECK (window_start < '24:00');
ALTER TABLE plans ADD CONSTRAINT plans_starts_on_check CHECK (starts_on BETWEEN '1970-01-01' AND '9000-12-31');
CREATE FUNCTION teamwork_check_time_zone() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER teams_check_time_zone BEFORE INSERT OR UPDATE OF time_zone ON teams
    FOR EACH ROW EXECUTE FUNCTION teamwork_check_time_zone();
CREATE TRIGGER locations_check_time_zone BEFORE INSERT OR UPDATE OF time_zone ON locations
    FOR EACH ROW EXECUTE FUNCTION teamwork_check_time_zone();
