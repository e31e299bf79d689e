-- The event listener: worker changes from the team and personal replicas reach
-- the master exactly once.
--
-- field_changes is the ledger of every worker change the listener has taken in,
-- applied or not. Its key (person, client change id) is what makes a change
-- count once: the listener records it in the same transaction as its effect on
-- the master and as its cursor, so a crash at any instant neither loses nor
-- doubles a change. Changes the master could not take as they were are
-- conflicts: they stay here, with the rule that decided them, until a manager
-- marks them resolved.
CREATE TABLE field_changes (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    replica     text NOT NULL,
    position    bigint NOT NULL,
    change_id   text NOT NULL,
    person_id   bigint NOT NULL,
    task_id     bigint,
    operation   text NOT NULL CHECK (operation IN ('start', 'complete', 'reopen', 'claim', 'checkin')),
    note        text,
    latitude    double precision,
    longitude   double precision,
    made_at     timestamptz NOT NULL,
    received_at timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    -- Whether the master changed as the worker asked.
    applied     boolean NOT NULL,
    -- The conflict rule that decided this change, NULL when there was none.
    conflict    text CHECK (conflict IN ('rejected', 'deleted', 'cancelled', 'moved', 'reassigned',
                                         'already_completed', 'not_completed', 'claimed_by_other', 'not_a_member')),
    detail      text,
    resolved_at timestamptz,
    resolved_by bigint REFERENCES people (id) ON DELETE SET NULL,
    resolution  text,
    UNIQUE (person_id, change_id),
    CHECK (conflict IS NOT NULL OR resolved_at IS NULL)
);
CREATE INDEX field_changes_open_conflicts_idx ON field_changes (id) WHERE conflict IS NOT NULL AND resolved_at IS NULL;
CREATE INDEX field_changes_task_idx ON field_changes (task_id);

-- How far the listener has read each replica file's worker_changes. source is
-- the replica ('team-12') or, for the file of a removed team kept aside, its
-- name under retired/. change_id is the change at that position: if the file no
-- longer holds it there (the file was recreated and its positions restarted),
-- the listener reads it from the start and the ledger's key skips what was
-- already taken in.
CREATE TABLE listener_cursors (
    source     text PRIMARY KEY,
    position   bigint NOT NULL CHECK (position >= 0),
    change_id  text,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- A history entry may come from a field change (which one), and a change the
-- master did not take as it was leaves an entry of its own ('field_change').
ALTER TABLE task_history ADD COLUMN field_change_id text;
ALTER TABLE task_history DROP CONSTRAINT task_history_action_check;
ALTER TABLE task_history ADD CONSTRAINT task_history_action_check
    CHECK (action IN ('created', 'updated', 'deleted', 'field_change'));
CREATE INDEX task_history_field_change_idx ON task_history (field_change_id) WHERE field_change_id IS NOT NULL;

-- The history trigger records which field change (if any) an entry came from,
-- and works out the changed fields in one query rather than key by key.
CREATE OR REPLACE FUNCTION tasks_record_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    old_row jsonb;
    new_row jsonb;
    diff    jsonb;
    field_change text := nullif(current_setting('teamwork.field_change', true), '');
BEGIN
    IF TG_OP = 'INSERT' THEN
        new_row := to_jsonb(NEW) - 'id' - 'version' - 'updated_at' - 'created_at';
        SELECT coalesce(jsonb_object_agg(key, jsonb_build_object('old', NULL, 'new', value)), '{}'::jsonb)
          INTO diff FROM jsonb_each(new_row) WHERE value <> 'null'::jsonb;
        INSERT INTO task_history (task_id, action, actor_id, changes, field_change_id)
        VALUES (NEW.id, 'created', teamwork_actor_id(), diff, field_change);
        PERFORM teamwork_feed_append('task', NEW.id, 'insert', NEW.team_id, NULL, NEW.assignee_id, NULL);
        RETURN NEW;
    ELSIF TG_OP = 'UPDATE' THEN
        old_row := to_jsonb(OLD) - 'version' - 'updated_at';
        new_row := to_jsonb(NEW) - 'version' - 'updated_at';
        SELECT jsonb_object_agg(n.key, jsonb_build_object('old', o.value, 'new', n.value))
          INTO diff FROM jsonb_each(new_row) n JOIN jsonb_each(old_row) o ON o.key = n.key
         WHERE o.value IS DISTINCT FROM n.value;
        IF diff IS NULL THEN
            RETURN NEW;
        END IF;
        INSERT INTO task_history (task_id, action, actor_id, changes, field_change_id)
        VALUES (NEW.id, 'updated', teamwork_actor_id(), diff, field_change);
        PERFORM teamwork_feed_append('task', NEW.id, 'update', NEW.team_id, OLD.team_id, NEW.assignee_id, OLD.assignee_id);
        RETURN NEW;
    ELSE
        old_row := to_jsonb(OLD) - 'id' - 'version' - 'updated_at' - 'created_at';
        SELECT coalesce(jsonb_object_agg(key, jsonb_build_object('old', value, 'new', NULL)), '{}'::jsonb)
          INTO diff FROM jsonb_each(old_row) WHERE value <> 'null'::jsonb;
        INSERT INTO task_history (task_id, action, actor_id, changes, field_change_id)
        VALUES (OLD.id, 'deleted', teamwork_actor_id(), diff, field_change);
        PERFORM teamwork_feed_append('task', OLD.id, 'delete', NULL, OLD.team_id, NULL, OLD.assignee_id);
        RETURN OLD;
    END IF;
END
$$;

-- The feed is appended to only by the SECURITY DEFINER triggers above, which run
-- as the owner: the function itself needs no rights of its own, and nobody
-- else may call it.
CREATE OR REPLACE FUNCTION teamwork_feed_append(
    p_entity text, p_entity_id bigint, p_operation text,
    p_team bigint, p_old_team bigint, p_assignee bigint, p_old_assignee bigint
) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(7310150001);
    INSERT INTO change_feed (position, entity, entity_id, operation, team_id, old_team_id, assignee_id, old_assignee_id)
    VALUES (nextval('change_feed_position_seq'), p_entity, p_entity_id, p_operation,
            p_team, p_old_team, p_assignee, p_old_assignee);
    -- A constant payload: PostgreSQL folds the notifications of one transaction into one.
    PERFORM pg_notify('teamwork_feed', '');
END
$$;
REVOKE ALL ON FUNCTION teamwork_feed_append(text, bigint, text, bigint, bigint, bigint, bigint) FROM PUBLIC;

-- Applies one batch of worker changes read from one replica, in position order,
-- and moves the cursor of p_source to (p_position, p_change_id), all in the
-- caller's one statement. p_changes is a JSON array of objects with the columns
-- of the replica's worker_changes (made_at and received_at in milliseconds).
--
-- The rules, in order (docs/listener.md explains them):
--   rejected at sync          recorded, not applied
--   task deleted              'deleted', not applied
--   task cancelled            'cancelled', not applied: the manager's cancel wins
--   complete                  applied unless already completed ('already_completed': the first
--                             completion to reach the master wins); applied but flagged 'moved'
--                             when the task left the replica's team meanwhile, 'reassigned' when a
--                             manager gave it to someone else meanwhile
--   start                     'moved', 'already_completed' or 'reassigned' when so, not applied
--   reopen                    only the completer's own completion, else 'not_completed'
--   claim                     only a free task of the replica's team ('moved', 'claimed_by_other',
--                             'not_a_member')
--   checkin                   the worker's last-known position, if newer
-- Field times are the worker's, but never later than when the server received them.
CREATE FUNCTION teamwork_apply_field_changes(
    p_replica text, p_source text, p_changes jsonb, p_position bigint, p_change_id text)
RETURNS TABLE (change_id text, task_id bigint, applied boolean, conflict text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
#variable_conflict use_column
DECLARE
    c         record;
    t         tasks%ROWTYPE;
    v_team    bigint;
    v_person  bigint;
    v_moved   boolean;
    v_applied boolean;
    v_changed boolean;
    v_conflict text;
    v_detail  text;
    v_at      timestamptz;
BEGIN
    IF p_replica ~ '^team-[0-9]+$' THEN
        v_team := substr(p_replica, 6)::bigint;
    ELSIF p_replica ~ '^person-[0-9]+$' THEN
        v_person := substr(p_replica, 8)::bigint;
    ELSE
        RAISE EXCEPTION 'not a team or personal replica: %', p_replica USING ERRCODE = '22023';
    END IF;

    -- Exactly once: a change already in the ledger was taken in before.
    FOR c IN
        SELECT * FROM jsonb_to_recordset(p_changes) AS x(
            position bigint, change_id text, person_id bigint, task_id bigint, operation text, note text,
            made_at bigint, received_at bigint, latitude double precision, longitude double precision, rejection text)
        WHERE NOT EXISTS (SELECT 1 FROM field_changes f WHERE f.person_id = x.person_id AND f.change_id = x.change_id)
        ORDER BY x.position
    LOOP

        v_applied := false;
        v_changed := false;
        v_conflict := NULL;
        v_detail := NULL;
        v_at := least(to_timestamp(c.made_at / 1000.0), to_timestamp(c.received_at / 1000.0));
        PERFORM set_config('teamwork.actor_id', c.person_id::text, true);
        PERFORM set_config('teamwork.field_change', c.change_id, true);

        IF c.rejection IS NOT NULL THEN
            v_conflict := 'rejected';
            v_detail := c.rejection;
        ELSIF c.operation = 'checkin' THEN
            UPDATE people SET last_seen_at = v_at
             WHERE id = c.person_id AND (last_seen_at IS NULL OR last_seen_at < v_at);
            IF FOUND THEN
                INSERT INTO locations (kind, person_id, latitude, longitude)
                VALUES ('person', c.person_id, c.latitude, c.longitude)
                ON CONFLICT (person_id) WHERE kind = 'person'
                DO UPDATE SET latitude = excluded.latitude, longitude = excluded.longitude, updated_at = now();
            END IF;
            v_applied := true;
        ELSE
            SELECT * INTO t FROM tasks WHERE id = c.task_id FOR UPDATE;
            IF NOT FOUND THEN
                v_conflict := 'deleted';
                v_detail := 'the task was deleted before the change reached the master';
            ELSIF t.status = 'cancelled' THEN
                v_conflict := 'cancelled';
                v_detail := 'the task was cancelled; the cancellation stands';
            ELSE
                v_moved := CASE WHEN v_team IS NOT NULL THEN t.team_id IS DISTINCT FROM v_team
                                ELSE t.team_id IS NOT NULL OR t.assignee_id IS DISTINCT FROM v_person END;
                IF c.operation = 'complete' THEN
                    IF t.status = 'completed' THEN
                        v_conflict := 'already_completed';
                        v_detail := format('already completed by person %s at %s; this completion was not applied',
                                           t.completed_by, t.completed_at);
                    ELSE
                        UPDATE tasks SET status = 'completed', completed_at = v_at, completed_by = c.person_id,
                                         completion_note = coalesce(c.note, ''), started_at = coalesce(started_at, v_at)
                         WHERE id = t.id;
                        v_applied := true;
                        v_changed := true;
                        IF v_moved THEN
                            v_conflict := 'moved';
                            v_detail := format('completed in %s, but the task had moved to %s; applied', p_replica,
                                               coalesce('team ' || t.team_id, 'person ' || t.assignee_id));
                        ELSIF t.assignee_id IS DISTINCT FROM c.person_id THEN
                            v_conflict := 'reassigned';
                            v_detail := format('completed by person %s while assigned to %s; applied', c.person_id,
                                               coalesce('person ' || t.assignee_id, 'nobody'));
                        END IF;
                    END IF;
                ELSIF c.operation = 'start' THEN
                    IF v_moved THEN
                        v_conflict := 'moved';
                        v_detail := format('started in %s, but the task had moved to %s', p_replica,
                                           coalesce('team ' || t.team_id, 'person ' || t.assignee_id));
                    ELSIF t.status = 'completed' THEN
                        v_conflict := 'already_completed';
                        v_detail := format('already completed by person %s at %s', t.completed_by, t.completed_at);
                    ELSIF t.assignee_id IS DISTINCT FROM c.person_id THEN
                        v_conflict := 'reassigned';
                        v_detail := format('started by person %s while assigned to %s', c.person_id,
                                           coalesce('person ' || t.assignee_id, 'nobody'));
                    ELSE
                        UPDATE tasks SET status = 'in_progress', started_at = coalesce(started_at, v_at) WHERE id = t.id;
                        v_applied := true;
                        v_changed := t.status <> 'in_progress';
                    END IF;
                ELSIF c.operation = 'reopen' THEN
                    IF t.status <> 'completed' OR t.completed_by IS DISTINCT FROM c.person_id THEN
                        v_conflict := 'not_completed';
                        v_detail := 'the master does not hold this worker''s completion to reopen';
                    ELSE
                        UPDATE tasks SET status = CASE WHEN started_at IS NOT NULL THEN 'in_progress'
                                                       WHEN assignee_id IS NULL THEN 'open' ELSE 'assigned' END,
                                         completed_at = NULL, completed_by = NULL, completion_note = NULL
                         WHERE id = t.id;
                        v_applied := true;
                        v_changed := true;
                    END IF;
                ELSIF c.operation = 'claim' THEN
                    IF v_moved OR v_team IS NULL THEN
                        v_conflict := 'moved';
                        v_detail := format('claimed in %s, but the task is no longer that team''s', p_replica);
                    ELSIF t.assignee_id = c.person_id THEN
                        v_applied := true;
                    ELSIF t.assignee_id IS NOT NULL THEN
                        v_conflict := 'claimed_by_other';
                        v_detail := format('already assigned to person %s', t.assignee_id);
                    ELSIF NOT EXISTS (SELECT 1 FROM team_memberships m WHERE m.team_id = v_team AND m.person_id = c.person_id) THEN
                        v_conflict := 'not_a_member';
                        v_detail := format('person %s is no longer a member of team %s', c.person_id, v_team);
                    ELSE
                        UPDATE tasks SET assignee_id = c.person_id WHERE id = t.id;
                        v_applied := true;
                        v_changed := true;
                    END IF;
                END IF;
            END IF;
        END IF;

        INSERT INTO field_changes (replica, position, change_id, person_id, task_id, operation, note, latitude, longitude,
                                   made_at, received_at, applied, conflict, detail)
        VALUES (p_replica, c.position, c.change_id, c.person_id, c.task_id, c.operation, c.note, c.latitude, c.longitude,
                to_timestamp(c.made_at / 1000.0), to_timestamp(c.received_at / 1000.0), v_applied, v_conflict, v_detail);

        -- Every change about a task leaves one history entry: the update it made,
        -- or, when it changed nothing, an entry saying what came in and why.
        IF c.task_id IS NOT NULL AND NOT v_changed THEN
            INSERT INTO task_history (task_id, action, actor_id, changes, field_change_id)
            SELECT c.task_id, 'field_change', c.person_id, jsonb_object_agg(k, jsonb_build_object('old', NULL, 'new', v)),
                   c.change_id
              FROM (VALUES ('operation', to_jsonb(c.operation)), ('applied', to_jsonb(v_applied)),
                           ('conflict', to_jsonb(v_conflict)), ('detail', to_jsonb(v_detail)), ('note', to_jsonb(c.note))
                   ) AS entry (k, v)
             WHERE v IS NOT NULL;
        END IF;

        change_id := c.change_id;
        task_id := c.task_id;
        applied := v_applied;
        conflict := v_conflict;
        RETURN NEXT;
    END LOOP;

    PERFORM set_config('teamwork.field_change', '', true);
    INSERT INTO listener_cursors AS lc (source, position, change_id) VALUES (p_source, p_position, p_change_id)
    ON CONFLICT (source) DO UPDATE SET position = excluded.position, change_id = excluded.change_id, updated_at = now();
END
$$;

REVOKE ALL ON FUNCTION teamwork_apply_field_changes(text, text, jsonb, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_apply_field_changes(text, text, jsonb, bigint, text) TO teamwork_service;
GRANT SELECT ON field_changes, listener_cursors TO teamwork_service;
-- Managers read the ledger and mark conflicts resolved.
GRANT SELECT ON field_changes, listener_cursors TO teamwork_manager;
GRANT UPDATE (resolved_at, resolved_by, resolution) ON field_changes TO teamwork_manager;
