-- The sync endpoint remembers who a token belongs to and their teams between
-- requests; PostgreSQL tells it at once (NOTIFY teamwork_access) when that can
-- have changed: a token revoked or deleted, a membership added or removed, a
-- person or team renamed or removed. Only the columns that matter fire: a
-- token's last-used time or a person's last check-in is no change of access.
-- The function's body lives in sql/functions/teamwork_access_changed.sql
-- (applied right after the numbered migrations); this creates it first so the
-- triggers can name it.
CREATE FUNCTION teamwork_access_changed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;

CREATE TRIGGER access_tokens_access_changed AFTER UPDATE OF revoked_at, token_hash, person_id OR DELETE ON access_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION teamwork_access_changed();
CREATE TRIGGER memberships_access_changed AFTER INSERT OR UPDATE OR DELETE ON team_memberships
    FOR EACH STATEMENT EXECUTE FUNCTION teamwork_access_changed();
CREATE TRIGGER people_access_changed AFTER UPDATE OF first_name, last_name, role OR DELETE ON people
    FOR EACH STATEMENT EXECUTE FUNCTION teamwork_access_changed();
CREATE TRIGGER teams_access_changed AFTER UPDATE OF slug, name OR DELETE ON teams
    FOR EACH STATEMENT EXECUTE FUNCTION teamwork_access_changed();
