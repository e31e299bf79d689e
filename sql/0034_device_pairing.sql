-- Pairing a worker's phone (docs/phone.md). A manager asks for a pairing: a
-- one-time code, stored only as its SHA-256, good for at most an hour (the tools
-- ask for ten minutes). The phone opens the link; the sync endpoint redeems the
-- code once for an access token of the phone's own, named after the device and
-- revocable like any other. Both steps go through SECURITY DEFINER functions:
-- who may pair whom is the rule for issuing tokens, decided in one place
-- (teamwork_check_token_issuer), and no role writes this table directly.
CREATE TABLE device_pairings (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    person_id   bigint NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    -- The person's role when the link was made: a link is redeemed only for that role (a
    -- worker's link made by a login that may pair workers only must not become a manager's token).
    role        text NOT NULL,
    code_hash   bytea NOT NULL UNIQUE CHECK (length(code_hash) = 32),
    created_by  bigint REFERENCES people (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    token_id    bigint REFERENCES access_tokens (id) ON DELETE SET NULL,
    CHECK (expires_at > created_at AND expires_at <= created_at + interval '1 hour')
);
CREATE INDEX device_pairings_person_idx ON device_pairings (person_id);
REVOKE ALL ON device_pairings FROM PUBLIC;
GRANT SELECT (id, person_id, role, created_by, created_at, expires_at, used_at, token_id) ON device_pairings TO teamwork_manager;

-- Stubs: the bodies live in sql/functions (applied after the migrations).
CREATE FUNCTION teamwork_check_token_issuer(bigint) RETURNS void LANGUAGE sql AS $$ SELECT $$;
CREATE FUNCTION teamwork_pair_device(bigint, text, integer) RETURNS bigint LANGUAGE sql AS $$ SELECT NULL::bigint $$;
CREATE FUNCTION teamwork_redeem_pairing(text, text, text) RETURNS TABLE (person_id bigint, token_id bigint, pairing_id bigint)
    LANGUAGE sql AS $$ SELECT NULL::bigint, NULL::bigint, NULL::bigint $$;
CREATE FUNCTION teamwork_sign_out_device(text) RETURNS boolean LANGUAGE sql AS $$ SELECT NULL::boolean $$;
CREATE FUNCTION teamwork_cancel_pairings(bigint) RETURNS integer LANGUAGE sql AS $$ SELECT NULL::integer $$;
REVOKE ALL ON FUNCTION teamwork_check_token_issuer(bigint), teamwork_pair_device(bigint, text, integer),
    teamwork_redeem_pairing(text, text, text), teamwork_sign_out_device(text), teamwork_cancel_pairings(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_pair_device(bigint, text, integer), teamwork_cancel_pairings(bigint) TO teamwork_manager;
GRANT EXECUTE ON FUNCTION teamwork_redeem_pairing(text, text, text), teamwork_sign_out_device(text) TO teamwork_service;
