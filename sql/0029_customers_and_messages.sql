-- The customer in the loop (docs/integrations.md, "Customers and their
-- messages"). A customer is a contact: a name, an email address and a phone
-- number (E.164), the language their messages are written in, and whether they
-- agreed to get messages. A site names its customer; a task inherits its site's
-- or names its own. Erasing a customer keeps the row (the work's history still
-- points at it) without anything personal in it. Customers never travel to the
-- workers' devices.
CREATE TABLE customers (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text NOT NULL CHECK (length(btrim(name)) BETWEEN 1 AND 200),
    email      text CHECK (octet_length(email) <= 254 AND email ~ '^[^@\s<>,;:"()\[\]\\]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$'),
    phone      text CHECK (phone ~ '^\+[1-9][0-9]{6,14}$'),
    language   text NOT NULL DEFAULT 'en' CHECK (language IN ('en', 'sv')),
    consent    boolean NOT NULL DEFAULT false,
    erased_at  timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CHECK (erased_at IS NULL OR (email IS NULL AND phone IS NULL AND NOT consent))
);
CREATE UNIQUE INDEX customers_email_key ON customers (lower(email)) WHERE email IS NOT NULL;

ALTER TABLE locations ADD COLUMN customer_id bigint REFERENCES customers (id) ON DELETE SET NULL;
ALTER TABLE tasks ADD COLUMN customer_id bigint REFERENCES customers (id) ON DELETE SET NULL;
CREATE INDEX locations_customer_idx ON locations (customer_id) WHERE customer_id IS NOT NULL;
CREATE INDEX tasks_customer_idx ON tasks (customer_id) WHERE customer_id IS NOT NULL;

-- A task's appointment with its customer: SEQUENCE rises with each change of its
-- window (and its cancellation), and what the customer answered to the newest.
CREATE TABLE appointments (
    task_id      bigint PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
    customer_id  bigint NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
    sequence     integer NOT NULL DEFAULT 0,
    answer       text NOT NULL DEFAULT 'none' CHECK (answer IN ('none', 'confirmed', 'move', 'cancel')),
    asked_start  timestamptz,
    asked_end    timestamptz,
    answered_at  timestamptz,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CHECK ((answer = 'move') = (asked_start IS NOT NULL AND asked_end IS NOT NULL))
);
-- The live boards' head reads the newest answer.
CREATE INDEX appointments_answered_idx ON appointments (answered_at) WHERE answered_at IS NOT NULL;

-- The customers' messages: written in the same transaction as the change that
-- caused them, at most once per task, kind, appointment sequence, channel and
-- customer; sent by the service's message sender (at least once: an email
-- carries a Message-ID stable for its row, an SMS the row's id).
CREATE TABLE customer_messages (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id         bigint NOT NULL,
    customer_id     bigint NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
    kind            text NOT NULL CHECK (kind IN ('booked', 'changed', 'cancelled', 'reminder', 'on_my_way', 'done')),
    sequence        integer NOT NULL,
    channel         text NOT NULL CHECK (channel IN ('email', 'sms')),
    -- on_my_way: the task the worker has just finished (where they set out from).
    after_task_id   bigint,
    state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed', 'skipped')),
    reason          text CHECK (octet_length(reason) <= 500),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    sent_at         timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (task_id, kind, sequence, channel, customer_id)
);
CREATE INDEX customer_messages_due_idx ON customer_messages (next_attempt_at) WHERE state = 'pending';
CREATE INDEX customer_messages_customer_idx ON customer_messages (customer_id, created_at);

-- The links in booked/changed messages to the customer's page: only the secret's
-- SHA-256 is kept. A link answers once, for its own sequence, until it expires;
-- all of that is decided in teamwork_appointment_* (sql/functions), SECURITY DEFINER.
CREATE TABLE appointment_links (
    secret_hash bytea PRIMARY KEY CHECK (octet_length(secret_hash) = 32),
    task_id     bigint NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    sequence    integer NOT NULL,
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX appointment_links_task_idx ON appointment_links (task_id);

-- Webhooks hear of attachments, checklists and appointments too.
ALTER TABLE webhook_subscriptions DROP CONSTRAINT webhook_subscriptions_events_check;
ALTER TABLE webhook_subscriptions ADD CONSTRAINT webhook_subscriptions_events_check
    CHECK (cardinality(events) BETWEEN 1 AND 20 AND events <@ ARRAY[
        'task.created', 'task.assigned', 'task.started', 'task.completed', 'task.cancelled', 'task.rescheduled',
        'attachment.added', 'checklist.completed', 'appointment.confirmed', 'appointment.moved',
        'appointment.cancelled']::text[]);

-- The bodies live in sql/functions.
CREATE FUNCTION teamwork_outbox_add(text, bigint, jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$;
CREATE FUNCTION attachments_outbox() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER attachments_outbox_inserted AFTER INSERT ON attachments REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION attachments_outbox();
CREATE FUNCTION teamwork_queue_customer_message(bigint, bigint, text, integer, bigint) RETURNS void LANGUAGE sql AS $$ SELECT $$;
CREATE FUNCTION teamwork_customer_task_changed(
    bigint, text, timestamptz, timestamptz, bigint, bigint, boolean, text, timestamptz, timestamptz, bigint
) RETURNS void LANGUAGE sql AS $$ SELECT $$;
CREATE FUNCTION tasks_customer_messages() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER tasks_customer_messages_inserted AFTER INSERT ON tasks REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION tasks_customer_messages();
CREATE TRIGGER tasks_customer_messages_updated AFTER UPDATE ON tasks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION tasks_customer_messages();
CREATE FUNCTION locations_customer_messages() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER locations_customer_changed AFTER UPDATE OF customer_id ON locations
    FOR EACH ROW WHEN (OLD.customer_id IS DISTINCT FROM NEW.customer_id) EXECUTE FUNCTION locations_customer_messages();
CREATE FUNCTION teamwork_queue_reminders(time) RETURNS integer LANGUAGE sql AS $$ SELECT 0 $$;
CREATE FUNCTION teamwork_issue_appointment_link(bigint, integer) RETURNS text LANGUAGE sql AS $$ SELECT NULL::text $$;
CREATE FUNCTION teamwork_appointment_link(text)
    RETURNS TABLE (task_id bigint, sequence integer, current_sequence integer, answer text, expires_at timestamptz,
                   used_at timestamptz, asked_start timestamptz, asked_end timestamptz)
    LANGUAGE sql AS $$ SELECT NULL::bigint, 0, 0, NULL::text, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz $$;
CREATE FUNCTION teamwork_appointment_answer(text, text, timestamptz, timestamptz) RETURNS text LANGUAGE sql AS $$ SELECT NULL::text $$;
REVOKE ALL ON FUNCTION teamwork_outbox_add(text, bigint, jsonb), teamwork_queue_customer_message(bigint, bigint, text, integer, bigint),
    teamwork_customer_task_changed(bigint, text, timestamptz, timestamptz, bigint, bigint, boolean, text, timestamptz, timestamptz, bigint),
    teamwork_queue_reminders(time), teamwork_issue_appointment_link(bigint, integer), teamwork_appointment_link(text),
    teamwork_appointment_answer(text, text, timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_queue_reminders(time), teamwork_issue_appointment_link(bigint, integer),
    teamwork_appointment_link(text), teamwork_appointment_answer(text, text, timestamptz, timestamptz) TO teamwork_service;

GRANT SELECT, INSERT, UPDATE, DELETE ON customers TO teamwork_manager;
GRANT SELECT ON customers, appointments, customer_messages TO teamwork_service;
GRANT SELECT ON appointments, customer_messages TO teamwork_manager;
GRANT DELETE ON customer_messages, appointments, appointment_links TO teamwork_manager;
GRANT SELECT (task_id, sequence, expires_at, used_at, created_at) ON appointment_links TO teamwork_manager;
GRANT UPDATE (state, reason, attempts, next_attempt_at, sent_at) ON customer_messages TO teamwork_service;
