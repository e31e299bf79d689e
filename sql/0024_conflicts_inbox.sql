-- The board's conflicts inbox is live: a field change set aside (a conflict)
-- or a conflict decided wakes the live boards at once (NOTIFY teamwork_feed,
-- which they already LISTEN on; what they compare, the board's head, counts
-- the open conflicts). Only a statement that recorded a conflict notifies: the
-- fleet's check-ins and plain completions wake no one.
-- The function's body lives in sql/functions/teamwork_conflicts_changed.sql.
CREATE FUNCTION teamwork_conflicts_changed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;

CREATE TRIGGER field_changes_conflict_recorded AFTER INSERT ON field_changes REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION teamwork_conflicts_changed();
CREATE TRIGGER field_changes_conflict_decided AFTER UPDATE OF resolved_at ON field_changes
    FOR EACH STATEMENT EXECUTE FUNCTION teamwork_conflicts_changed();
