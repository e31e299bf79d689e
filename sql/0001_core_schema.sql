-- Teamwork central store: common data (people, teams, memberships, locations)
-- and the master task list. Shipped migrations are never edited; add a new file.

CREATE TABLE people (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    first_name    text NOT NULL CHECK (btrim(first_name) <> ''),
    last_name     text NOT NULL CHECK (btrim(last_name) <> ''),
    email         text NOT NULL CHECK (email LIKE '_%@_%'),
    role          text NOT NULL CHECK (role IN ('manager', 'worker', 'admin')),
    avatar_url    text,
    default_team_id bigint,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz
);
CREATE UNIQUE INDEX people_email_key ON people (lower(email));

CREATE TABLE teams (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    slug        text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$'),
    name        text NOT NULL CHECK (btrim(name) <> ''),
    description text NOT NULL DEFAULT '',
    color       text CHECK (color ~ '^#[0-9a-f]{6}$'),
    created_by  bigint REFERENCES people (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE team_memberships (
    team_id   bigint NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    person_id bigint NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    joined_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team_id, person_id)
);
CREATE INDEX team_memberships_person_idx ON team_memberships (person_id);

-- A default team must be one of the person's teams; leaving the team clears it.
ALTER TABLE people
    ADD CONSTRAINT people_default_team_membership
    FOREIGN KEY (default_team_id, id) REFERENCES team_memberships (team_id, person_id)
    ON DELETE SET NULL (default_team_id);

-- A location is either a task site or one person's last-known position.
CREATE TABLE locations (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind        text NOT NULL CHECK (kind IN ('site', 'person')),
    person_id   bigint REFERENCES people (id) ON DELETE CASCADE,
    name        text NOT NULL DEFAULT '',
    latitude    double precision NOT NULL CHECK (latitude BETWEEN -90 AND 90),
    longitude   double precision NOT NULL CHECK (longitude BETWEEN -180 AND 180),
    elevation   double precision,
    street      text NOT NULL DEFAULT '',
    city        text NOT NULL DEFAULT '',
    region      text NOT NULL DEFAULT '',
    postal_code text NOT NULL DEFAULT '',
    country     text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((kind = 'person') = (person_id IS NOT NULL))
);
CREATE UNIQUE INDEX locations_person_key ON locations (person_id) WHERE kind = 'person';

-- The master task list. A task belongs to a team, to a person, or to a member of a team.
CREATE TABLE tasks (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    title           text NOT NULL CHECK (btrim(title) <> ''),
    description     text NOT NULL DEFAULT '',
    priority        text NOT NULL DEFAULT 'normal' CHECK (priority IN ('low', 'normal', 'high', 'urgent')),
    status          text NOT NULL DEFAULT 'open'
                    CHECK (status IN ('open', 'assigned', 'in_progress', 'completed', 'cancelled')),
    team_id         bigint REFERENCES teams (id) ON DELETE RESTRICT,
    assignee_id     bigint REFERENCES people (id) ON DELETE RESTRICT,
    location_id     bigint REFERENCES locations (id) ON DELETE SET NULL,
    due_at          timestamptz,
    created_by      bigint REFERENCES people (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    started_at      timestamptz,
    completed_at    timestamptz,
    completed_by    bigint REFERENCES people (id) ON DELETE SET NULL,
    completion_note text,
    version         integer NOT NULL DEFAULT 1,
    CHECK (team_id IS NOT NULL OR assignee_id IS NOT NULL),
    CHECK ((status = 'completed') = (completed_at IS NOT NULL)),
    -- Assigned to a team and a person: the person must be a member of that team.
    -- Leaving the team hands the task back to the team as free-floating.
    CONSTRAINT tasks_assignee_membership
        FOREIGN KEY (team_id, assignee_id) REFERENCES team_memberships (team_id, person_id)
        ON DELETE SET NULL (assignee_id)
);
CREATE INDEX tasks_team_idx ON tasks (team_id, due_at);
CREATE INDEX tasks_assignee_idx ON tasks (assignee_id, due_at);
CREATE INDEX tasks_status_due_idx ON tasks (status, due_at);

-- Every change to a task: who, when, what changed (old and new values).
-- No foreign key to tasks: the history of a deleted task is kept.
CREATE TABLE task_history (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id    bigint NOT NULL,
    action     text NOT NULL CHECK (action IN ('created', 'updated', 'deleted')),
    actor_id   bigint,
    db_user    text NOT NULL DEFAULT session_user,
    changed_at timestamptz NOT NULL DEFAULT now(),
    changes    jsonb NOT NULL
);
CREATE INDEX task_history_task_idx ON task_history (task_id, id);

-- The change feed: every insert, update and delete gets a position, in the same
-- transaction as the change. Deletes leave a tombstone (operation 'delete').
-- team_id/old_team_id and assignee_id/old_assignee_id tell a reader which team
-- and personal databases a change touches, including a move between teams.
CREATE SEQUENCE change_feed_position_seq;
CREATE TABLE change_feed (
    position        bigint PRIMARY KEY,
    entity          text NOT NULL CHECK (entity IN ('task', 'person', 'team', 'membership', 'location')),
    entity_id       bigint NOT NULL,
    operation       text NOT NULL CHECK (operation IN ('insert', 'update', 'delete')),
    team_id         bigint,
    old_team_id     bigint,
    assignee_id     bigint,
    old_assignee_id bigint,
    changed_at      timestamptz NOT NULL DEFAULT now(),
    txid            xid8 NOT NULL DEFAULT pg_current_xact_id()
);
CREATE INDEX change_feed_task_idx ON change_feed (entity, entity_id);

-- Who is acting, as set by the tools with set_config('teamwork.actor_id', ..., true).
CREATE FUNCTION teamwork_actor_id() RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT nullif(current_setting('teamwork.actor_id', true), '')::bigint
$$;

-- Positions are handed out under a transaction-scoped advisory lock, so they are
-- assigned in commit order: a reader that has seen position N will never later
-- find a newly committed position below N. Writers of the feed serialize here.
CREATE FUNCTION teamwork_feed_append(
    p_entity text, p_entity_id bigint, p_operation text,
    p_team bigint, p_old_team bigint, p_assignee bigint, p_old_assignee bigint
) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(7310150001);
    INSERT INTO change_feed (position, entity, entity_id, operation, team_id, old_team_id, assignee_id, old_assignee_id)
    VALUES (nextval('change_feed_position_seq'), p_entity, p_entity_id, p_operation,
            p_team, p_old_team, p_assignee, p_old_assignee);
    -- A constant payload: PostgreSQL folds the notifications of one transaction into one.
    PERFORM pg_notify('teamwork_feed', '');
END
$$;

-- Keeps the derived fields of a task consistent, whoever writes it:
-- open <-> assigned follows the assignee, updated_at and version move on every change.
CREATE FUNCTION tasks_normalize() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'open' AND NEW.assignee_id IS NOT NULL THEN
        NEW.status := 'assigned';
    ELSIF NEW.status = 'assigned' AND NEW.assignee_id IS NULL THEN
        NEW.status := 'open';
    END IF;
    IF TG_OP = 'UPDATE' THEN
        IF NEW IS NOT DISTINCT FROM OLD THEN
            RETURN NEW;
        END IF;
        NEW.updated_at := now();
        NEW.version := OLD.version + 1;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER tasks_normalize BEFORE INSERT OR UPDATE ON tasks
    FOR EACH ROW EXECUTE FUNCTION tasks_normalize();

-- History and feed for tasks, written in the same transaction as the change.
-- SECURITY DEFINER: the tools' roles cannot write history or feed rows themselves.
CREATE FUNCTION tasks_record_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    old_row jsonb;
    new_row jsonb;
    diff    jsonb := '{}'::jsonb;
    k       text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        new_row := to_jsonb(NEW) - 'id' - 'version' - 'updated_at' - 'created_at';
        SELECT coalesce(jsonb_object_agg(key, jsonb_build_object('old', NULL, 'new', value)), '{}'::jsonb)
          INTO diff FROM jsonb_each(new_row) WHERE value <> 'null'::jsonb;
        INSERT INTO task_history (task_id, action, actor_id, changes)
        VALUES (NEW.id, 'created', teamwork_actor_id(), diff);
        PERFORM teamwork_feed_append('task', NEW.id, 'insert', NEW.team_id, NULL, NEW.assignee_id, NULL);
        RETURN NEW;
    ELSIF TG_OP = 'UPDATE' THEN
        old_row := to_jsonb(OLD) - 'version' - 'updated_at';
        new_row := to_jsonb(NEW) - 'version' - 'updated_at';
        FOR k IN SELECT key FROM jsonb_each(new_row) LOOP
            IF old_row -> k IS DISTINCT FROM new_row -> k THEN
                diff := diff || jsonb_build_object(k, jsonb_build_object('old', old_row -> k, 'new', new_row -> k));
            END IF;
        END LOOP;
        IF diff = '{}'::jsonb THEN
            RETURN NEW;
        END IF;
        INSERT INTO task_history (task_id, action, actor_id, changes)
        VALUES (NEW.id, 'updated', teamwork_actor_id(), diff);
        PERFORM teamwork_feed_append('task', NEW.id, 'update', NEW.team_id, OLD.team_id, NEW.assignee_id, OLD.assignee_id);
        RETURN NEW;
    ELSE
        old_row := to_jsonb(OLD) - 'id' - 'version' - 'updated_at' - 'created_at';
        SELECT coalesce(jsonb_object_agg(key, jsonb_build_object('old', value, 'new', NULL)), '{}'::jsonb)
          INTO diff FROM jsonb_each(old_row) WHERE value <> 'null'::jsonb;
        INSERT INTO task_history (task_id, action, actor_id, changes)
        VALUES (OLD.id, 'deleted', teamwork_actor_id(), diff);
        PERFORM teamwork_feed_append('task', OLD.id, 'delete', NULL, OLD.team_id, NULL, OLD.assignee_id);
        RETURN OLD;
    END IF;
END
$$;
CREATE TRIGGER tasks_record_change AFTER INSERT OR UPDATE OR DELETE ON tasks
    FOR EACH ROW EXECUTE FUNCTION tasks_record_change();

-- Common data changes go to the feed too, so replicas of people, teams,
-- memberships and locations can follow the same position.
CREATE FUNCTION common_record_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    op text := lower(TG_OP);
    r record;
BEGIN
    IF TG_OP = 'UPDATE' AND to_jsonb(NEW) - 'updated_at' - 'last_seen_at' = to_jsonb(OLD) - 'updated_at' - 'last_seen_at' THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
    IF TG_TABLE_NAME = 'team_memberships' THEN
        PERFORM teamwork_feed_append('membership', r.person_id, op, r.team_id, NULL, NULL, NULL);
    ELSIF TG_TABLE_NAME = 'people' THEN
        PERFORM teamwork_feed_append('person', r.id, op, NULL, NULL, NULL, NULL);
    ELSIF TG_TABLE_NAME = 'teams' THEN
        PERFORM teamwork_feed_append('team', r.id, op, r.id, NULL, NULL, NULL);
    ELSE
        PERFORM teamwork_feed_append('location', r.id, op, NULL, NULL, NULL, NULL);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER people_record_change AFTER INSERT OR UPDATE OR DELETE ON people
    FOR EACH ROW EXECUTE FUNCTION common_record_change();
CREATE TRIGGER teams_record_change AFTER INSERT OR UPDATE OR DELETE ON teams
    FOR EACH ROW EXECUTE FUNCTION common_record_change();
CREATE TRIGGER memberships_record_change AFTER INSERT OR UPDATE OR DELETE ON team_memberships
    FOR EACH ROW EXECUTE FUNCTION common_record_change();
CREATE TRIGGER locations_record_change AFTER INSERT OR UPDATE OR DELETE ON locations
    FOR EACH ROW EXECUTE FUNCTION common_record_change();

-- Keeps updated_at honest on the common tables.
CREATE FUNCTION touch_updated_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW IS DISTINCT FROM OLD THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER people_touch BEFORE UPDATE ON people FOR EACH ROW EXECUTE FUNCTION touch_updated_at();
CREATE TRIGGER teams_touch BEFORE UPDATE ON teams FOR EACH ROW EXECUTE FUNCTION touch_updated_at();
CREATE TRIGGER locations_touch BEFORE UPDATE ON locations FOR EACH ROW EXECUTE FUNCTION touch_updated_at();
