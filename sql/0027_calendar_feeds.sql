-- A calendar feed per worker (docs/integrations.md, "Calendar feeds"): an
-- iCalendar URL with a secret in it, as calendar apps need, showing their
-- assigned work from today on. Only the secret's SHA-256 is kept; issuing a new
-- one replaces the old, and revoking ends the feed. Who a secret belongs to is
-- decided only in teamwork_calendar_person (sql/functions), SECURITY DEFINER.
CREATE TABLE calendar_feeds (
    person_id   bigint PRIMARY KEY REFERENCES people (id) ON DELETE CASCADE,
    secret_hash bytea NOT NULL UNIQUE CHECK (octet_length(secret_hash) = 32),
    created_by  bigint REFERENCES people (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION teamwork_calendar_person(p_secret text) RETURNS bigint LANGUAGE sql AS $$ SELECT NULL::bigint $$;
REVOKE ALL ON FUNCTION teamwork_calendar_person(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_calendar_person(text) TO teamwork_service, teamwork_manager;
GRANT SELECT (person_id, created_at), INSERT, DELETE ON calendar_feeds TO teamwork_manager;
GRANT UPDATE (secret_hash, created_by, created_at) ON calendar_feeds TO teamwork_manager;
