-- A task deleted takes its appointment (and the customer's links to it) with it; the
-- booking is kept on record here first (issue 49 leftover: deleting a cancelled task
-- removed its appointment without a record). What the customer was told stays in
-- customer_messages, which do not go with the task. Written only by the definer
-- trigger; erasing the customer (teamwork_erase_customer) erases these too.
CREATE TABLE appointment_removals (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id         bigint NOT NULL,
    customer_id     bigint NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
    booking         bigint NOT NULL,
    sequence        integer NOT NULL,
    answer          text NOT NULL,
    answered_at     timestamptz,
    links           integer NOT NULL,
    removed_by      bigint REFERENCES people (id) ON DELETE SET NULL,
    removed_by_role text NOT NULL DEFAULT session_user,
    removed_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX appointment_removals_customer_idx ON appointment_removals (customer_id);
GRANT SELECT ON appointment_removals TO teamwork_manager;

-- The body lives in sql/functions/tasks_record_appointment_removal.sql.
CREATE FUNCTION tasks_record_appointment_removal() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN OLD; END $$;
REVOKE ALL ON FUNCTION tasks_record_appointment_removal() FROM PUBLIC;
CREATE TRIGGER tasks_record_appointment_removal BEFORE DELETE ON tasks
    FOR EACH ROW EXECUTE FUNCTION tasks_record_appointment_removal();
