-- The parts catalogue travels in the common data (issue 53): every change of a
-- part goes to the change feed, and the generator copies the catalogue into the
-- common replica, read-only on every device.
ALTER TABLE change_feed DROP CONSTRAINT change_feed_entity_check;
ALTER TABLE change_feed ADD CONSTRAINT change_feed_entity_check
    CHECK (entity IN ('task', 'person', 'team', 'membership', 'location', 'refusal', 'part'));
CREATE TRIGGER parts_record_changes AFTER INSERT OR UPDATE OR DELETE ON parts
    FOR EACH ROW EXECUTE FUNCTION common_record_change();
