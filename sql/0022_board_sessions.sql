-- Sign-ins to the dispatcher's board (teamwork-service, /board; docs/security.md).
-- A manager or an admin signs in with an access token from `person token issue`;
-- the board answers with a session cookie whose value is stored only as its
-- SHA-256 here. A session ends when it expires, at sign-out (the row goes), when
-- the token it was opened with is revoked, or when its person is deactivated or
-- is no longer a manager: every request checks all four. `csrf` is the token
-- every form of the session carries.
CREATE TABLE board_sessions (
    secret_hash bytea PRIMARY KEY CHECK (length(secret_hash) = 32),
    person_id   bigint NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    token_id    bigint NOT NULL REFERENCES access_tokens (id) ON DELETE CASCADE,
    csrf        text NOT NULL CHECK (csrf ~ '^[A-Za-z0-9_-]{43}$'),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    CHECK (expires_at > created_at)
);
CREATE INDEX board_sessions_person_idx ON board_sessions (person_id);
CREATE INDEX board_sessions_expiry_idx ON board_sessions (expires_at);

-- The board acts as a manager: its database role is one (docs/operations.md, "The board").
GRANT SELECT, INSERT, DELETE ON board_sessions TO teamwork_manager;
