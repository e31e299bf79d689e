-- What a field worker may know of a task's customer travels to devices (docs/phone.md):
-- their first name and how the booked visit stands (TaskSchema's customer_first_name and
-- visit, derived on the master). A derived fact needs a rule for when it ends: whenever the
-- appointment is answered or made anew, the customer is renamed or erased, or a site names
-- another customer, each task concerned goes into the change feed again (no history entry:
-- the task itself did not change), so the generator copies it with the facts as they are now.
CREATE FUNCTION teamwork_visit_changed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER appointments_reach_the_field AFTER INSERT OR DELETE ON appointments
    FOR EACH ROW EXECUTE FUNCTION teamwork_visit_changed();
CREATE TRIGGER appointments_answer_reaches_the_field AFTER UPDATE OF answer, task_id ON appointments
    FOR EACH ROW WHEN (OLD.answer IS DISTINCT FROM NEW.answer OR OLD.task_id IS DISTINCT FROM NEW.task_id)
    EXECUTE FUNCTION teamwork_visit_changed();
-- A site's tasks that take its customer, found without reading every task.
CREATE INDEX tasks_site_customer_idx ON tasks (location_id) WHERE customer_id IS NULL;
CREATE TRIGGER customers_reach_the_field AFTER UPDATE OF name, erased_at ON customers
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.erased_at IS DISTINCT FROM NEW.erased_at)
    EXECUTE FUNCTION teamwork_visit_changed();
CREATE TRIGGER locations_customer_reach_the_field AFTER UPDATE OF customer_id ON locations
    FOR EACH ROW WHEN (OLD.customer_id IS DISTINCT FROM NEW.customer_id) EXECUTE FUNCTION teamwork_visit_changed();
REVOKE ALL ON FUNCTION teamwork_visit_changed() FROM PUBLIC;
