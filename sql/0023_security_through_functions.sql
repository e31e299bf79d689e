-- Who someone is gets decided only inside SECURITY DEFINER functions, never by
-- a row some role may write (docs/security.md, "Privilege paths"). Tokens and
-- board sessions were written directly: a manager with an SQL login could
-- insert a session for anyone (and read every session's CSRF token), and issue
-- a token for an admin. From here on no role but the owner writes
-- access_tokens, board_sessions, actor_roles or attachments; the tools and the
-- service go through the functions below (bodies in sql/functions/).

REVOKE ALL ON board_sessions FROM teamwork_manager, teamwork_service, PUBLIC;
REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON access_tokens FROM teamwork_manager, teamwork_service, PUBLIC;
REVOKE UPDATE (last_used_at) ON access_tokens FROM teamwork_service;
REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON actor_roles, attachments FROM teamwork_manager, teamwork_service, PUBLIC;

-- Deactivating a person revokes their tokens in the same statement, by trigger, whoever deactivates.
CREATE FUNCTION people_revoke_tokens_on_leave() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER people_revoke_tokens_on_leave AFTER UPDATE OF deactivated_at ON people
    FOR EACH ROW WHEN (OLD.deactivated_at IS NULL AND NEW.deactivated_at IS NOT NULL)
    EXECUTE FUNCTION people_revoke_tokens_on_leave();

-- Who may make someone a manager or an admin (or take it away): an admin, or the owner.
CREATE FUNCTION teamwork_trusted_session() RETURNS boolean LANGUAGE sql AS $$ SELECT false $$;
CREATE FUNCTION people_check_role_change() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER people_check_role_change BEFORE INSERT OR UPDATE OF role ON people
    FOR EACH ROW EXECUTE FUNCTION people_check_role_change();

CREATE FUNCTION teamwork_issue_token(bigint, text, text) RETURNS bigint LANGUAGE sql AS $$ SELECT 0::bigint $$;
CREATE FUNCTION teamwork_revoke_token(bigint) RETURNS boolean LANGUAGE sql AS $$ SELECT false $$;
CREATE FUNCTION teamwork_authenticate(text) RETURNS bigint LANGUAGE sql AS $$ SELECT NULL::bigint $$;
CREATE FUNCTION teamwork_record_token_use(text[]) RETURNS integer LANGUAGE sql AS $$ SELECT 0 $$;
CREATE FUNCTION teamwork_open_board_session(text, text, text, integer)
    RETURNS TABLE (outcome text, person_id bigint, expires_at timestamptz) LANGUAGE sql AS $$ SELECT NULL::text, NULL::bigint, NULL::timestamptz $$;
CREATE FUNCTION teamwork_board_session(text)
    RETURNS TABLE (person_id bigint, csrf text, expires_at timestamptz) LANGUAGE sql AS $$ SELECT NULL::bigint, NULL::text, NULL::timestamptz $$;
CREATE FUNCTION teamwork_close_board_session(text) RETURNS boolean LANGUAGE sql AS $$ SELECT false $$;

REVOKE ALL ON FUNCTION teamwork_trusted_session() FROM PUBLIC;
REVOKE ALL ON FUNCTION teamwork_issue_token(bigint, text, text), teamwork_revoke_token(bigint),
    teamwork_authenticate(text), teamwork_record_token_use(text[]),
    teamwork_open_board_session(text, text, text, integer), teamwork_board_session(text),
    teamwork_close_board_session(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_issue_token(bigint, text, text), teamwork_revoke_token(bigint) TO teamwork_manager;
GRANT EXECUTE ON FUNCTION teamwork_open_board_session(text, text, text, integer), teamwork_board_session(text),
    teamwork_close_board_session(text) TO teamwork_manager;
GRANT EXECUTE ON FUNCTION teamwork_authenticate(text), teamwork_record_token_use(text[]) TO teamwork_service;
