-- A calendar feed never expires: the key it was signed with keeps checking it for as
-- long as the feed lives (teamwork_link_keys), however long ago the key was retired.
-- Feeds are issued in one definer function, which knows the key (teamwork_issue_calendar_feed).
ALTER TABLE calendar_feeds ADD COLUMN key_id integer REFERENCES link_keys (id);

-- The bodies live in sql/functions.
CREATE FUNCTION teamwork_signed_secret(text) RETURNS TABLE (secret text, key_id integer)
    LANGUAGE sql AS $$ SELECT NULL::text, NULL::integer $$;
REVOKE ALL ON FUNCTION teamwork_signed_secret(text) FROM PUBLIC;
CREATE FUNCTION teamwork_issue_calendar_feed(bigint) RETURNS text LANGUAGE sql AS $$ SELECT NULL::text $$;
REVOKE ALL ON FUNCTION teamwork_issue_calendar_feed(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_issue_calendar_feed(bigint) TO teamwork_manager;
