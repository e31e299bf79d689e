-- Public links checked without the master (issue 64): an appointment link's and a
-- calendar feed's secret carries a MAC made with a key of the service's
-- (teamwork_link_secret), so a made-up one is told from a real one before anything
-- is looked up. Keys rotate with an overlap (teamwork_link_keys,
-- teamwork_rotate_link_key); links made before keys existed are unsigned and are
-- looked up as before while any of them is live.
CREATE TABLE link_keys (
    id         integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key        bytea NOT NULL CHECK (octet_length(key) = 32),
    created_at timestamptz NOT NULL DEFAULT now(),
    -- No longer used to make links; it still checks them for 31 days (an appointment link lasts 30).
    retired_at timestamptz
);
-- The first key: 32 bytes from pg_strong_random (two v4 UUIDs, 244 random bits).
INSERT INTO link_keys (key)
VALUES (substr(decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'), 1, 32));
-- Nobody reads or writes the keys but the definer functions.
REVOKE ALL ON link_keys FROM PUBLIC;

ALTER TABLE appointment_links ADD COLUMN signed boolean NOT NULL DEFAULT false;
ALTER TABLE calendar_feeds ADD COLUMN signed boolean NOT NULL DEFAULT false;
GRANT UPDATE (signed) ON calendar_feeds TO teamwork_manager;

-- The bodies live in sql/functions.
CREATE FUNCTION teamwork_link_secret(text) RETURNS text LANGUAGE sql AS $$ SELECT NULL::text $$;
REVOKE ALL ON FUNCTION teamwork_link_secret(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_link_secret(text) TO teamwork_manager, teamwork_service;
CREATE FUNCTION teamwork_link_keys() RETURNS TABLE (id integer, key bytea, legacy_appointments boolean, legacy_feeds boolean)
    LANGUAGE sql AS $$ SELECT NULL::integer, NULL::bytea, NULL::boolean, NULL::boolean $$;
REVOKE ALL ON FUNCTION teamwork_link_keys() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_link_keys() TO teamwork_service;
CREATE FUNCTION teamwork_rotate_link_key(interval) RETURNS boolean LANGUAGE sql AS $$ SELECT false $$;
REVOKE ALL ON FUNCTION teamwork_rotate_link_key(interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_rotate_link_key(interval) TO teamwork_manager, teamwork_service;
