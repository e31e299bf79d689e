-- Dispatch: what people can do, what a task needs, and when it can be done.
-- A skill is a short lowercase word (electrical, climbing, high-voltage); a
-- person has up to 32, a task requires up to 8. An appointment window is an
-- interval (start before end, both or neither) besides the due date.
CREATE FUNCTION teamwork_skills_valid(p_skills text[], p_most integer) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT cardinality(p_skills) <= p_most
       AND array_position(p_skills, NULL) IS NULL
       AND (SELECT bool_and(s ~ '^[a-z0-9][a-z0-9-]{0,30}[a-z0-9]$|^[a-z0-9]$') FROM unnest(p_skills) s) IS NOT FALSE
$$;

ALTER TABLE people ADD COLUMN skills text[] NOT NULL DEFAULT '{}'
    CONSTRAINT people_skills_check CHECK (teamwork_skills_valid(skills, 32));
ALTER TABLE tasks ADD COLUMN required_skills text[] NOT NULL DEFAULT '{}'
    CONSTRAINT tasks_required_skills_check CHECK (teamwork_skills_valid(required_skills, 8));
ALTER TABLE tasks ADD COLUMN window_start timestamptz;
ALTER TABLE tasks ADD COLUMN window_end timestamptz;
ALTER TABLE tasks ADD CONSTRAINT tasks_window_check
    CHECK ((window_start IS NULL) = (window_end IS NULL) AND window_start < window_end
           AND window_end - window_start <= interval '31 days');
CREATE INDEX tasks_window_idx ON tasks (window_start) WHERE window_start IS NOT NULL;

-- The body lives in sql/functions/tasks_check_skills.sql.
CREATE FUNCTION tasks_check_skills() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER tasks_check_skills BEFORE INSERT OR UPDATE OF assignee_id, required_skills ON tasks
    FOR EACH ROW EXECUTE FUNCTION tasks_check_skills();
