-- A plan or a skipped/moved day changed: `teamwork-service run` makes its
-- occurrences at once instead of at its next hourly pass (the manager's plan
-- commands make them themselves; this covers every other writer).
-- The body lives in sql/functions/teamwork_plans_changed.sql.
CREATE FUNCTION teamwork_plans_changed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER plans_changed AFTER INSERT OR UPDATE OR DELETE ON plans
    FOR EACH STATEMENT EXECUTE FUNCTION teamwork_plans_changed();
CREATE TRIGGER plan_exceptions_changed AFTER INSERT OR UPDATE OR DELETE ON plan_exceptions
    FOR EACH STATEMENT EXECUTE FUNCTION teamwork_plans_changed();
