-- Web Push to the phones (issue 66, docs/phone.md "Notifications"): a phone that
-- allowed notifications keeps a subscription with its token (one each, gone when
-- the token is revoked), and the master queues a short message for it when work
-- is assigned to its person, when that work changes, when one of the person's
-- changes is refused and when a dispatcher decides on one set aside. A message
-- names the task and what happened, never what the task says (the phone shows
-- its own copy). The service sends them (PushService) signed with its VAPID key,
-- made once and read only by the service.
CREATE TABLE push_keys (
    only_one    boolean PRIMARY KEY DEFAULT true CHECK (only_one),
    private_key bytea NOT NULL CHECK (octet_length(private_key) = 32),
    public_key  bytea NOT NULL CHECK (octet_length(public_key) = 65),
    created_at  timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON push_keys FROM PUBLIC;

CREATE TABLE push_subscriptions (
    token_id   bigint PRIMARY KEY REFERENCES access_tokens (id) ON DELETE CASCADE,
    person_id  bigint NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    endpoint   text NOT NULL CHECK (octet_length(endpoint) BETWEEN 12 AND 1024),
    p256dh     bytea NOT NULL CHECK (octet_length(p256dh) = 65),
    auth       bytea NOT NULL CHECK (octet_length(auth) = 16),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX push_subscriptions_person_idx ON push_subscriptions (person_id);
REVOKE ALL ON push_subscriptions FROM PUBLIC;

-- What waits to be pushed, at most once per subscription, kind and task: a
-- message not yet sent takes the same happening again as already said. Sent
-- ones are deleted; one a day old unsent is dropped (the phone syncs anyway).
CREATE TABLE push_messages (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_id   bigint NOT NULL REFERENCES push_subscriptions (token_id) ON DELETE CASCADE,
    kind       text NOT NULL CHECK (kind IN ('assigned', 'changed', 'refused', 'decided')),
    task_id    bigint NOT NULL,
    queued_at  timestamptz NOT NULL DEFAULT now(),
    due_at     timestamptz NOT NULL DEFAULT now(),
    attempts   integer NOT NULL DEFAULT 0,
    last_error text,
    UNIQUE (token_id, kind, task_id)
);
CREATE INDEX push_messages_due_idx ON push_messages (due_at);
REVOKE ALL ON push_messages FROM PUBLIC;
GRANT SELECT, UPDATE, DELETE ON push_messages TO teamwork_service;
GRANT SELECT, DELETE ON push_subscriptions TO teamwork_service;

-- The bodies live in sql/functions.
CREATE FUNCTION teamwork_push_key(bytea, bytea) RETURNS TABLE (private_key bytea, public_key bytea)
    LANGUAGE sql AS $$ SELECT NULL::bytea, NULL::bytea $$;
REVOKE ALL ON FUNCTION teamwork_push_key(bytea, bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_push_key(bytea, bytea) TO teamwork_service;
CREATE FUNCTION teamwork_set_push_subscription(text, text, bytea, bytea) RETURNS boolean LANGUAGE sql AS $$ SELECT false $$;
REVOKE ALL ON FUNCTION teamwork_set_push_subscription(text, text, bytea, bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_set_push_subscription(text, text, bytea, bytea) TO teamwork_service;
CREATE FUNCTION teamwork_remove_push_subscription(text) RETURNS boolean LANGUAGE sql AS $$ SELECT false $$;
REVOKE ALL ON FUNCTION teamwork_remove_push_subscription(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_remove_push_subscription(text) TO teamwork_service;
CREATE FUNCTION teamwork_queue_push(text, bigint[], bigint[]) RETURNS void LANGUAGE sql AS $$ SELECT $$;
REVOKE ALL ON FUNCTION teamwork_queue_push(text, bigint[], bigint[]) FROM PUBLIC;

CREATE FUNCTION tasks_push() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER tasks_push_inserted AFTER INSERT ON tasks REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION tasks_push();
CREATE TRIGGER tasks_push_updated AFTER UPDATE ON tasks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION tasks_push();
CREATE FUNCTION field_changes_push() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER field_changes_push_refused AFTER INSERT ON field_changes REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION field_changes_push();
CREATE TRIGGER field_changes_push_decided AFTER UPDATE ON field_changes
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION field_changes_push();
-- A revoked token's phone is told nothing more.
CREATE FUNCTION access_tokens_end_push() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER access_tokens_end_push AFTER UPDATE OF revoked_at ON access_tokens
    FOR EACH ROW WHEN (NEW.revoked_at IS NOT NULL) EXECUTE FUNCTION access_tokens_end_push();
