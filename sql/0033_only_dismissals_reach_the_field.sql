-- Only a dismissal reaches the worker (review of migration 0031): deciding any
-- conflict sent its resolution to the team's file, so an acceptance marked the
-- worker's completion refused on their phone, and a manager's own note from
-- `conflicts resolve` (with their name) reached every teammate's device. Now
-- only a dismissal ('dismissed: ' and the reason, written for the worker) goes;
-- an acceptance shows as the task completed by them.
DROP TRIGGER field_changes_decision_reaches_the_field ON field_changes;
CREATE TRIGGER field_changes_dismissal_reaches_the_field AFTER UPDATE OF resolved_at ON field_changes
    FOR EACH ROW WHEN (OLD.resolved_at IS NULL AND NEW.resolved_at IS NOT NULL AND NOT NEW.applied AND NEW.operation <> 'checkin'
                       AND NEW.resolution LIKE 'dismissed: %')
    EXECUTE FUNCTION teamwork_field_change_decided();
