-- Access tokens for teamwork-worker. Only a SHA-256 hash of each token is
-- stored; the token itself is shown once, when it is issued.
CREATE TABLE access_tokens (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    person_id    bigint NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    token_hash   bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    label        text NOT NULL DEFAULT '',
    created_by   bigint REFERENCES people (id) ON DELETE SET NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX access_tokens_person_idx ON access_tokens (person_id);

GRANT SELECT, INSERT, UPDATE ON access_tokens TO teamwork_manager;
-- The sync endpoint checks tokens and records their use, nothing more.
GRANT SELECT, UPDATE (last_used_at) ON access_tokens TO teamwork_service;
