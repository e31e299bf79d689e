-- Customers' messages can wait for the dispatcher (issue 50: twelve booking
-- emails went out the moment the service started after a CSV import, with no way
-- to prepare the day first). A hold names a day (on each task's own clock) and a
-- team, or every team; a message about a task on a held day is queued 'held' and
-- waits, saying so, until the dispatcher releases the day. `task import
-- --hold-messages` holds each day and team the import touches, in its own
-- transaction (the transaction mark 'hold_messages'). Holds are made and
-- released only through the definer functions below.
CREATE TABLE message_holds (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    day        date NOT NULL,
    team_id    bigint REFERENCES teams (id) ON DELETE CASCADE,
    note       text NOT NULL DEFAULT '' CHECK (octet_length(note) <= 500),
    created_by bigint REFERENCES people (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX message_holds_day_team ON message_holds (day, coalesce(team_id, 0));
REVOKE ALL ON message_holds FROM PUBLIC;
GRANT SELECT ON message_holds TO teamwork_manager, teamwork_service;

ALTER TABLE customer_messages DROP CONSTRAINT customer_messages_state_check;
ALTER TABLE customer_messages ADD CONSTRAINT customer_messages_state_check
    CHECK (state IN ('pending', 'held', 'sent', 'failed', 'skipped'));

ALTER TABLE transaction_marks DROP CONSTRAINT transaction_marks_name_check;
ALTER TABLE transaction_marks ADD CONSTRAINT transaction_marks_name_check CHECK (name IN ('forced', 'planned', 'hold_messages'));

-- The day a task's messages belong to: its window's (else its due time's) day on its own clock.
CREATE FUNCTION teamwork_message_day(bigint) RETURNS date LANGUAGE sql AS $$ SELECT NULL::date $$;
CREATE FUNCTION teamwork_hold_messages(date, bigint, text) RETURNS bigint LANGUAGE sql AS $$ SELECT NULL::bigint $$;
CREATE FUNCTION teamwork_release_messages(date, bigint) RETURNS integer LANGUAGE sql AS $$ SELECT NULL::integer $$;
REVOKE ALL ON FUNCTION teamwork_message_day(bigint), teamwork_hold_messages(date, bigint, text),
    teamwork_release_messages(date, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_hold_messages(date, bigint, text), teamwork_release_messages(date, bigint) TO teamwork_manager;
GRANT EXECUTE ON FUNCTION teamwork_message_day(bigint) TO teamwork_manager, teamwork_service;
