-- The fourth review (docs/security.md). A manager's SQL login read every webhook's
-- secret (and could sign events billing trusts), an old appointment link answered
-- for the next booking of the same task (links were keyed by task and sequence,
-- and a booking made anew started again at 0), and a manager could DELETE what a
-- customer was told. From here on:
--   - a webhook's secret is read by the service alone; managers see its
--     fingerprint, and secrets are made and rotated inside SECURITY DEFINER
--     functions (pg_strong_random) that return them once;
--   - every booking has an id never used again, and its links name it (deleted
--     with it by a foreign key);
--   - customers, their messages, appointments and links are deleted only by
--     definer functions, which record what they removed.

-- Webhook secrets.
ALTER TABLE webhook_subscriptions
    ADD COLUMN secret_fingerprint text GENERATED ALWAYS AS (left(encode(sha256(secret::bytea), 'hex'), 16)) STORED;
REVOKE SELECT, INSERT, UPDATE ON webhook_subscriptions FROM teamwork_manager;
GRANT SELECT (id, url, events, description, secret_fingerprint, previous_until, failures, paused_at, paused_reason,
              created_by, created_at) ON webhook_subscriptions TO teamwork_manager;
GRANT UPDATE (url, events, description, failures, paused_at, paused_reason) ON webhook_subscriptions TO teamwork_manager;
CREATE FUNCTION teamwork_webhook_add(text, text[], text) RETURNS TABLE (id bigint, secret text)
    LANGUAGE sql AS $$ SELECT NULL::bigint, NULL::text $$;
CREATE FUNCTION teamwork_webhook_rotate(bigint, interval) RETURNS text LANGUAGE sql AS $$ SELECT NULL::text $$;
REVOKE ALL ON FUNCTION teamwork_webhook_add(text, text[], text), teamwork_webhook_rotate(bigint, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_webhook_add(text, text[], text), teamwork_webhook_rotate(bigint, interval) TO teamwork_manager;

-- Bookings that never repeat.
ALTER TABLE appointments ADD COLUMN booking bigint GENERATED ALWAYS AS IDENTITY UNIQUE;
ALTER TABLE appointment_links ADD COLUMN booking bigint REFERENCES appointments (booking) ON DELETE CASCADE;
-- A link issued before its task's current booking row was last changed may be a former booking's
-- (made anew at sequence 0): only links issued since, for the current sequence, carry over.
UPDATE appointment_links k SET booking = a.booking FROM appointments a
 WHERE a.task_id = k.task_id AND a.sequence = k.sequence AND k.created_at >= a.updated_at;
DELETE FROM appointment_links WHERE booking IS NULL;
ALTER TABLE appointment_links ALTER COLUMN booking SET NOT NULL;
CREATE INDEX appointment_links_booking_idx ON appointment_links (booking, sequence);

-- Deleting what a customer was told goes through functions that say so.
REVOKE DELETE ON customers, customer_messages, appointments, appointment_links FROM teamwork_manager;
CREATE TABLE customer_erasures (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    customer_id  bigint NOT NULL REFERENCES customers (id),
    erased_by    bigint REFERENCES people (id),
    erased_by_role text NOT NULL DEFAULT session_user,
    erased_at    timestamptz NOT NULL DEFAULT now(),
    messages     integer NOT NULL,
    appointments integer NOT NULL,
    links        integer NOT NULL
);
GRANT SELECT ON customer_erasures TO teamwork_manager;
CREATE FUNCTION teamwork_erase_customer(bigint) RETURNS bigint LANGUAGE sql AS $$ SELECT NULL::bigint $$;
REVOKE ALL ON FUNCTION teamwork_erase_customer(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_erase_customer(bigint) TO teamwork_manager;

-- Reminders are due by the service's clock (a rehearsal or a test sets it), not the database's.
DROP FUNCTION teamwork_queue_reminders(time);
CREATE FUNCTION teamwork_queue_reminders(time, timestamptz) RETURNS integer LANGUAGE sql AS $$ SELECT 0 $$;
REVOKE ALL ON FUNCTION teamwork_queue_reminders(time, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_queue_reminders(time, timestamptz) TO teamwork_service;

-- What history says of a change beyond who made it (a manager's override of a rule, "forced"; the
-- day planner's changes, "planned") was a session setting any SQL session could set. It is now a
-- mark on the transaction, written only through teamwork_mark (managers) into a table no role
-- writes, and read by the definer triggers through teamwork_marked.
CREATE UNLOGGED TABLE transaction_marks (
    txid  bigint NOT NULL,
    name  text NOT NULL CHECK (name IN ('forced', 'planned')),
    value text NOT NULL CHECK (octet_length(value) BETWEEN 1 AND 500),
    PRIMARY KEY (txid, name)
);
REVOKE ALL ON transaction_marks FROM PUBLIC;
CREATE FUNCTION teamwork_mark(text, text) RETURNS void LANGUAGE sql AS $$ SELECT $$;
CREATE FUNCTION teamwork_marked(text) RETURNS text LANGUAGE sql AS $$ SELECT NULL::text $$;
REVOKE ALL ON FUNCTION teamwork_mark(text, text), teamwork_marked(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_mark(text, text) TO teamwork_manager;
GRANT EXECUTE ON FUNCTION teamwork_marked(text) TO teamwork_manager, teamwork_service;
