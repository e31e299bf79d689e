-- A dispatcher's decision on a field change the master did not take reaches the
-- worker who made it (issue 50: after "Dismiss" with a reason, the worker's
-- status read the same as before). Deciding such a conflict appends a 'refusal'
-- entry for its ledger row, routed to the replica the change came from; the
-- generator then writes the refusal with the decision into the replica's
-- refusals, and the worker's device pulls it. A change that was applied (a
-- completion of a task reassigned meanwhile, listed for a look) sends nothing:
-- the device took it as done, and it is.
-- The function's body lives in sql/functions/teamwork_field_change_decided.sql.
CREATE FUNCTION teamwork_field_change_decided() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER field_changes_decision_reaches_the_field AFTER UPDATE OF resolved_at ON field_changes
    FOR EACH ROW WHEN (OLD.resolved_at IS NULL AND NEW.resolved_at IS NOT NULL AND NOT NEW.applied AND NEW.operation <> 'checkin')
    EXECUTE FUNCTION teamwork_field_change_decided();
