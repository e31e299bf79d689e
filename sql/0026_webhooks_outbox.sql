-- The outbox (docs/integrations.md): every event the systems around us hear of
-- is written in the same transaction as the change that caused it, with one
-- delivery per subscription that wants it. A service of its own sends them
-- (at least once; each delivery carries the event's stable id, so a receiver
-- can drop a repeat). Nothing is written while nobody subscribes.
--
-- Webhooks follow the Standard Webhooks specification: webhook-id,
-- webhook-timestamp and webhook-signature (v1: HMAC-SHA256 over
-- "id.timestamp.body" with the subscription's secret). A rotated secret stays
-- valid beside the new one until previous_until.
CREATE TABLE webhook_subscriptions (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url            text NOT NULL CHECK (url ~ '^https?://[^\s/]+' AND octet_length(url) <= 2000),
    events         text[] NOT NULL CHECK (cardinality(events) BETWEEN 1 AND 20 AND events <@ ARRAY[
                       'task.created', 'task.assigned', 'task.started', 'task.completed', 'task.cancelled',
                       'task.rescheduled']::text[]),
    description    text NOT NULL DEFAULT '' CHECK (length(description) <= 200),
    secret         text NOT NULL CHECK (secret ~ '^whsec_[A-Za-z0-9+/=]{32,88}$'),
    previous_secret text CHECK (previous_secret ~ '^whsec_[A-Za-z0-9+/=]{32,88}$'),
    previous_until timestamptz,
    -- Consecutive deliveries that failed for good; a success sets it back to 0.
    failures       integer NOT NULL DEFAULT 0,
    paused_at      timestamptz,
    paused_reason  text,
    created_by     bigint REFERENCES people (id) ON DELETE SET NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE outbox_events (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event      text NOT NULL,
    task_id    bigint,
    payload    jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE webhook_deliveries (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id        bigint NOT NULL REFERENCES outbox_events (id) ON DELETE CASCADE,
    subscription_id bigint NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_status     integer,
    last_error      text,
    delivered_at    timestamptz,
    UNIQUE (event_id, subscription_id)
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_subscription_idx ON webhook_deliveries (subscription_id, id);

-- The bodies live in sql/functions/tasks_outbox.sql and teamwork_outbox_payload.sql.
CREATE FUNCTION teamwork_outbox_payload(text, jsonb) RETURNS jsonb LANGUAGE sql STABLE AS $$ SELECT NULL::jsonb $$;
REVOKE ALL ON FUNCTION teamwork_outbox_payload(text, jsonb) FROM PUBLIC;
CREATE FUNCTION tasks_outbox() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER tasks_outbox_inserted AFTER INSERT ON tasks REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION tasks_outbox();
CREATE TRIGGER tasks_outbox_updated AFTER UPDATE ON tasks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION tasks_outbox();

-- Managers subscribe, pause, resume and replay; the secret is theirs to see once (the CLI shows it
-- when made). The service reads what is due and records each attempt.
GRANT SELECT, INSERT, DELETE ON webhook_subscriptions TO teamwork_manager;
GRANT UPDATE (url, events, description, secret, previous_secret, previous_until, failures, paused_at, paused_reason)
    ON webhook_subscriptions TO teamwork_manager;
GRANT SELECT ON outbox_events, webhook_deliveries TO teamwork_manager;
GRANT UPDATE (state, attempts, next_attempt_at, last_status, last_error) ON webhook_deliveries TO teamwork_manager;
GRANT SELECT ON webhook_subscriptions, outbox_events, webhook_deliveries TO teamwork_service;
GRANT UPDATE (failures, paused_at, paused_reason) ON webhook_subscriptions TO teamwork_service;
GRANT UPDATE (state, attempts, next_attempt_at, last_status, last_error, delivered_at) ON webhook_deliveries TO teamwork_service;
