-- Web Push, after its review (issue 66): news that comes again while its message is
-- being sent is not lost (a generation the send checks), and a worker hears when
-- work is taken from them ('taken'). The endpoint learns the service's public key
-- without the private one (teamwork_push_public_key).
ALTER TABLE push_messages ADD COLUMN generation integer NOT NULL DEFAULT 0;
ALTER TABLE push_messages DROP CONSTRAINT push_messages_kind_check;
ALTER TABLE push_messages ADD CONSTRAINT push_messages_kind_check
    CHECK (kind IN ('assigned', 'changed', 'refused', 'decided', 'taken'));

-- The body lives in sql/functions.
CREATE FUNCTION teamwork_push_public_key(bytea, bytea) RETURNS bytea LANGUAGE sql AS $$ SELECT NULL::bytea $$;
REVOKE ALL ON FUNCTION teamwork_push_public_key(bytea, bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_push_public_key(bytea, bytea) TO teamwork_service;
