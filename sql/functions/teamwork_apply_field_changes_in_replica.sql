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
--                             manager gave it to someone else meanwhile, unless the worker lacks a
--                             skill the task requires ('missing_skills', not applied)
--   start                     'moved', 'already_completed' or 'reassigned' when so, not applied
--   reopen                    only the completer's own completion, else 'not_completed'
--   claim                     only a free, unfinished task of the replica's team, by a member with
--                             every skill it requires who has not left (deactivated: 'not_a_member', so
--                             work claimed offline before someone left stays free for the team)
--                             ('moved', 'already_completed', 'claimed_by_other', 'not_a_member', 'missing_skills')
--   checkin                   the worker's last-known position, if newer (in bulk, below)
--   use                       what the assignee used on a task not completed ('moved', 'already_completed',
--                             'reassigned'): a part of the catalogue (not retired, for a new line), or a
--                             described line, in a quantity from 0 to 100000 (0 removes the line), at most
--                             100 lines a person ('invalid_material'); the person's line for that part or
--                             description is set (task_materials), unless a later one was recorded
--                             already ('superseded')
--   time                      time on the task by someone who holds or held it (teamwork_time_held,
--                             'not_held'), completed or not ('moved'): work or travel, an interval
--                             START/END in UTC that exists, ending no earlier than it starts, at most 24
--                             hours long, beginning at most 31 days before it was sent ('invalid_time'),
--                             not on days payroll closed ('period_closed'), overlapping none of the
--                             person's other entries ('time_overlap'); sets the person's entry of that
--                             kind (time_entries, sql/0042), replacing an automatic one, unless a later
--                             one was recorded already ('superseded') or a manager corrected it
--                             ('corrected_by_manager': the dispatcher decides)
--   answer                    the task's checklist item's latest answer, by the assignee of a task not
--                             completed ('moved', 'already_completed', 'reassigned'), to an item the
--                             task's checklist version has with a value it takes ('invalid_answer',
--                             teamwork_checklist_problem); a completion waits for every required
--                             item's answer ('missing_answers')
--   attach                    a file (its blob whole on the sync endpoint) added to a task by its
--                             assignee before it is completed ('moved', 'already_completed',
--                             'reassigned'), recorded once in attachments; with an item, the answer to
--                             that photo (a photo's type) or signature (with a signer) item
--                             ('invalid_attachment')
-- Field times are the worker's, but never later than when the server received them.
-- The effect of an applied change on the task is the one WorkerChange.effect
-- (SyncProtocol) gives the device and the replica; Tests/Contract/field-changes.json
-- holds both to the same cases. A change not applied (other than one the sync
-- endpoint had already refused) appends a 'refusal' to the change feed, so the
-- generator puts the master's view back in that replica with the reason.
--
-- The common case of a batch (one worker claiming, starting and completing a
-- task, with nothing in the way) is applied as a few set-based statements, and
-- only the rest change by change; outcomes are the same as change by change.
-- Only teamwork_apply_field_changes calls it (after its own check).
CREATE OR REPLACE FUNCTION teamwork_apply_field_changes_in_replica(
    p_replica text, p_source text, p_changes jsonb, p_position bigint, p_change_id text)
RETURNS TABLE (change_id text, task_id bigint, applied boolean, conflict text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
#variable_conflict use_column
DECLARE
    c         record;
    t         public.tasks%ROWTYPE;
    v_team    bigint;
    v_person  bigint;
    v_moved   boolean;
    v_applied boolean;
    v_changed boolean;
    v_conflict text;
    v_detail  text;
    v_at      timestamptz;
    v_batch   public.teamwork_worker_change[];
    v_fast    public.teamwork_worker_change[];
    v_rest    public.teamwork_worker_change[];
    v_checkins public.teamwork_worker_change[];
    v_bulk    public.teamwork_worker_change[];
    v_plan    jsonb;
    v_ledger  bigint;
    v_missing text[];
    v_items   jsonb;
    v_item    jsonb;
    v_problem text;
    v_part    public.parts%ROWTYPE;
    v_quantity numeric;
    v_line    bigint;
    v_merged  jsonb;
BEGIN
    IF p_replica ~ '^team-[0-9]+$' THEN
        v_team := substr(p_replica, 6)::bigint;
    ELSIF p_replica ~ '^person-[0-9]+$' THEN
        v_person := substr(p_replica, 8)::bigint;
    ELSE
        RAISE EXCEPTION 'not a team or personal replica: %', p_replica USING ERRCODE = '22023';
    END IF;

    -- Exactly once: a change already in the ledger was taken in before.
    SELECT coalesce(array_agg(x ORDER BY x.position), '{}') INTO v_batch
      FROM jsonb_populate_recordset(NULL::public.teamwork_worker_change, p_changes) x
     WHERE NOT EXISTS (SELECT 1 FROM public.field_changes f WHERE f.person_id = x.person_id AND f.change_id = x.change_id);

    -- The batch's tasks, locked in one go (in id order: no deadlock with another batch).
    PERFORM 1 FROM public.tasks WHERE id IN (SELECT b.task_id FROM unnest(v_batch) b) ORDER BY id FOR UPDATE;

    -- The common case, in bulk: everything the batch holds about a task is one
    -- worker's plain run of work on it (a claim first, if the task was free,
    -- then starts, then perhaps a completion, last), the task is still this
    -- replica's, neither completed nor cancelled, and the worker is its assignee
    -- (or, claiming it, a member of the team). Applied one by one, each of
    -- those changes would be applied with no conflict, so the task's end state
    -- is known and is written with one UPDATE for all such tasks.
    WITH per_task AS (
        SELECT b.task_id,
               bool_and(b.rejection IS NULL AND b.operation IN ('claim', 'start', 'complete')) AS plain,
               count(*) FILTER (WHERE b.operation = 'claim') AS claims,
               min(b.position) FILTER (WHERE b.operation = 'claim') AS claimed_at,
               count(*) FILTER (WHERE b.operation = 'complete') AS completions,
               max(b.position) FILTER (WHERE b.operation = 'complete') AS completed_at,
               min(b.position) AS first_at, max(b.position) AS last_at,
               min(b.person_id) AS person, max(b.person_id) AS last_person
          FROM unnest(v_batch) b WHERE b.task_id IS NOT NULL GROUP BY b.task_id
    ), fast AS (
        SELECT p.task_id FROM per_task p JOIN public.tasks t ON t.id = p.task_id
         WHERE p.plain AND p.person = p.last_person
           AND (p.completions = 0 OR (p.completions = 1 AND p.completed_at = p.last_at))
           AND (t.status IN ('open', 'assigned') OR (t.status = 'in_progress' AND t.started_at IS NOT NULL))
           AND (p.completions = 0 OR t.checklist_id IS NULL)
           AND CASE WHEN v_team IS NOT NULL THEN t.team_id = v_team
                    ELSE t.team_id IS NULL AND t.assignee_id = v_person END
           AND CASE WHEN p.claims = 0 THEN t.assignee_id = p.person
                    ELSE p.claims = 1 AND p.claimed_at = p.first_at AND v_team IS NOT NULL
                         AND (t.assignee_id = p.person
                              OR (t.assignee_id IS NULL AND EXISTS (SELECT 1 FROM public.team_memberships m
                                                                     WHERE m.team_id = v_team AND m.person_id = p.person)
                                  AND t.required_skills <@ (SELECT s.skills FROM public.people s
                                                             WHERE s.id = p.person AND s.deactivated_at IS NULL)))
               END
    )
    SELECT coalesce(array_agg(b ORDER BY b.position) FILTER (WHERE f.task_id IS NOT NULL), '{}'),
           coalesce(array_agg(b ORDER BY b.position) FILTER (WHERE f.task_id IS NULL), '{}')
      INTO v_fast, v_rest
      FROM unnest(v_batch) b LEFT JOIN fast f ON f.task_id = b.task_id;

    IF cardinality(v_fast) > 0 THEN
        -- Per task: its end state, and the one change that carries the update
        -- (its history entry, as the task's `updated` entry): the completion if
        -- any, else the first start if the task was not in progress, else the
        -- claim if the task was free. An earlier change that would have changed
        -- the task on its own (the claim, the first start) is folded into that
        -- update: the master goes from free to completed in one step, as any
        -- reader would have seen it anyway, and the task is written once.
        WITH runs AS (
            SELECT b.task_id, min(b.person_id) AS person,
                   (array_agg(b ORDER BY b.position) FILTER (WHERE b.operation = 'claim'))[1] AS claim,
                   (array_agg(b ORDER BY b.position) FILTER (WHERE b.operation = 'start'))[1] AS start,
                   (array_agg(b ORDER BY b.position) FILTER (WHERE b.operation = 'complete'))[1] AS done
              FROM unnest(v_fast) b GROUP BY b.task_id
        ), plans AS (
            SELECT r.task_id, r.person,
                   (r.claim).change_id IS NOT NULL AND t.assignee_id IS NULL AS claims,
                   (r.start).change_id IS NOT NULL AND t.status <> 'in_progress' AS starts,
                   (r.done).change_id IS NOT NULL AS completes,
                   r.claim, r.start, r.done,
                   least(to_timestamp((r.start).made_at / 1000.0), to_timestamp((r.start).received_at / 1000.0)) AS started,
                   least(to_timestamp((r.done).made_at / 1000.0), to_timestamp((r.done).received_at / 1000.0)) AS finished
              FROM runs r JOIN public.tasks t ON t.id = r.task_id
        )
        SELECT jsonb_object_agg(p.task_id, jsonb_strip_nulls(jsonb_build_object(
                   'change', CASE WHEN p.completes THEN (p.done).change_id WHEN p.starts THEN (p.start).change_id
                                  ELSE (p.claim).change_id END,
                   'operation', CASE WHEN p.completes THEN 'complete' WHEN p.starts THEN 'start' ELSE 'claim' END,
                   'actor', p.person,
                   'assignee', CASE WHEN p.claims THEN p.person END,
                   'status', CASE WHEN p.completes THEN 'completed' WHEN p.starts THEN 'in_progress' END,
                   'started', CASE WHEN p.completes THEN coalesce(p.started, p.finished) WHEN p.starts THEN p.started END,
                   'completed', CASE WHEN p.completes THEN p.finished END,
                   'note', CASE WHEN p.completes THEN coalesce((p.done).note, '') END,
                   'folded', to_jsonb(array_remove(ARRAY[CASE WHEN p.claims AND (p.starts OR p.completes)
                                                              THEN (p.claim).change_id END,
                                                         CASE WHEN p.starts AND p.completes
                                                              THEN (p.start).change_id END], NULL)))))
          INTO v_plan
          FROM plans p WHERE p.claims OR p.starts OR p.completes;

        -- The other changes, each with its own history entry: applied, and either
        -- folded into the update or finding the task as it asked already.
        INSERT INTO public.task_history (task_id, action, actor_id, changes, field_change_id)
        SELECT b.task_id, 'field_change', b.person_id,
               jsonb_build_object('operation', jsonb_build_object('old', NULL, 'new', b.operation),
                                  'applied', jsonb_build_object('old', NULL, 'new', true))
               || CASE WHEN b.note IS NULL THEN '{}'::jsonb
                       ELSE jsonb_build_object('note', jsonb_build_object('old', NULL, 'new', b.note)) END
               || CASE WHEN coalesce(v_plan -> b.task_id::text -> 'folded' ? b.change_id, false)
                       THEN jsonb_build_object('detail', jsonb_build_object('old', NULL,
                                'new', format('applied with the %s that followed it in the same batch',
                                              CASE v_plan -> b.task_id::text ->> 'operation'
                                                   WHEN 'complete' THEN 'completion' ELSE 'start' END)))
                       ELSE '{}'::jsonb END,
               b.change_id
          FROM unnest(v_fast) b
         WHERE (v_plan -> b.task_id::text ->> 'change') IS DISTINCT FROM b.change_id
         ORDER BY b.position;

        IF v_plan IS NOT NULL THEN
            PERFORM set_config('teamwork.field_changes', v_plan::text, true);
            -- Automatic time is held to a window before when the work reached the service (teamwork_time_counts).
            PERFORM set_config('teamwork.received_at',
                               (SELECT to_timestamp(max(b.received_at) / 1000.0)::text FROM unnest(v_fast) b), true);
            UPDATE public.tasks t
               SET assignee_id = coalesce((e.value ->> 'assignee')::bigint, t.assignee_id),
                   status = coalesce(e.value ->> 'status', t.status),
                   started_at = coalesce(t.started_at, (e.value ->> 'started')::timestamptz),
                   completed_at = coalesce((e.value ->> 'completed')::timestamptz, t.completed_at),
                   completed_by = CASE WHEN e.value ? 'completed' THEN (e.value ->> 'actor')::bigint ELSE t.completed_by END,
                   completion_note = coalesce(e.value ->> 'note', t.completion_note)
              FROM jsonb_each(v_plan) e WHERE t.id = e.key::bigint;
            PERFORM set_config('teamwork.field_changes', '', true);
            PERFORM set_config('teamwork.received_at', '', true);
        END IF;
    END IF;

    -- Check-ins, in bulk: most of what a fleet sends, and each one alone is a
    -- few statements and triggers. Applied one by one, a person's check-ins
    -- would leave the latest time seen (if later than the master's) and the
    -- position of the first check-in made at that time; that state is written
    -- once per person. People are locked in id order, as tasks are above.
    SELECT coalesce(array_agg(b ORDER BY b.position) FILTER (WHERE b.operation = 'checkin' AND b.rejection IS NULL), '{}'),
           coalesce(array_agg(b ORDER BY b.position)
                    FILTER (WHERE (b.operation = 'checkin' AND b.rejection IS NULL) IS NOT TRUE), '{}')
      INTO v_checkins, v_rest
      FROM unnest(v_rest) b;

    -- Everyone whose position or time this batch writes, locked at once in id order (a time entry
    -- is written under its person's lock, below): two batches that share people never wait on each
    -- other in a circle.
    PERFORM 1 FROM public.people
     WHERE id IN (SELECT b.person_id FROM unnest(v_checkins) b
                  UNION SELECT b.person_id FROM unnest(v_rest) b WHERE b.operation = 'time' AND b.rejection IS NULL)
     ORDER BY id FOR NO KEY UPDATE;
    IF cardinality(v_checkins) > 0 THEN
        WITH latest AS (
            SELECT DISTINCT ON (b.person_id) b.person_id, b.latitude, b.longitude,
                   least(to_timestamp(b.made_at / 1000.0), to_timestamp(b.received_at / 1000.0)) AS seen
              FROM unnest(v_checkins) b
             ORDER BY b.person_id, least(to_timestamp(b.made_at / 1000.0), to_timestamp(b.received_at / 1000.0)) DESC, b.position
        ), moved AS (
            UPDATE public.people p SET last_seen_at = l.seen
              FROM latest l
             WHERE p.id = l.person_id AND (p.last_seen_at IS NULL OR p.last_seen_at < l.seen)
            RETURNING p.id, l.latitude, l.longitude
        )
        INSERT INTO public.locations (kind, person_id, latitude, longitude)
        SELECT 'person', m.id, m.latitude, m.longitude FROM moved m ORDER BY m.id
        ON CONFLICT (person_id) WHERE kind = 'person'
        DO UPDATE SET latitude = excluded.latitude, longitude = excluded.longitude, updated_at = now();
    END IF;

    -- The ledger entries of everything applied in bulk above: applied, no conflict.
    v_bulk := v_fast || v_checkins;
    IF cardinality(v_bulk) > 0 THEN
        INSERT INTO public.field_changes (replica, position, change_id, person_id, task_id, operation, note, latitude, longitude,
                                   made_at, received_at, applied, conflict, detail)
        SELECT p_replica, b.position, b.change_id, b.person_id, b.task_id, b.operation, b.note, b.latitude, b.longitude,
               to_timestamp(b.made_at / 1000.0), to_timestamp(b.received_at / 1000.0), true, NULL, NULL
          FROM unnest(v_bulk) b ORDER BY b.position;

        RETURN QUERY SELECT b.change_id, b.task_id, true, NULL::text FROM unnest(v_bulk) b;
    END IF;

    -- Entries that supersede each other merge: a time entry or a use that a later change of the
    -- same person in this batch sets again (the same task and kind, or the same task and line) is
    -- superseded by it at once: its ledger row says so (not applied, no conflict, nothing for the
    -- dispatcher to decide), with no history and nothing to billing of its own. One push causes
    -- work by the entries it sets, not by how often the phone sent them; the later change meets
    -- every rule.
    SELECT coalesce(jsonb_object_agg(m.position::text, m.later), '{}') INTO v_merged
      FROM (SELECT x.position,
                   last_value(x.change_id) OVER (PARTITION BY x.person_id, x.task_id, x.operation,
                                                      CASE WHEN x.operation = 'time' THEN x.item
                                                           ELSE coalesce(lower(x.item), '~' || lower(btrim(x.note))) END
                                                 ORDER BY x.position ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS later,
                   x.change_id
              FROM unnest(v_rest) x
             WHERE x.operation IN ('time', 'use') AND x.rejection IS NULL AND x.task_id IS NOT NULL) m
     WHERE m.later <> m.change_id;

    -- Everything else, change by change.
    FOR c IN SELECT * FROM unnest(v_rest) x ORDER BY x.position
    LOOP
        IF v_merged ? c.position::text THEN
            INSERT INTO public.field_changes (replica, position, change_id, person_id, task_id, operation, note, latitude, longitude,
                                       made_at, received_at, applied, conflict, detail, item, value)
            VALUES (p_replica, c.position, c.change_id, c.person_id, c.task_id, c.operation, c.note, NULL, NULL,
                    to_timestamp(c.made_at / 1000.0), to_timestamp(c.received_at / 1000.0), false, NULL,
                    'superseded by the later change ' || (v_merged ->> c.position::text) || ' of the same sync',
                    left(c.item, 100), left(c.value, 2000));
            change_id := c.change_id;
            task_id := c.task_id;
            applied := false;
            conflict := NULL;
            RETURN NEXT;
            CONTINUE;
        END IF;

        v_applied := false;
        v_changed := false;
        v_conflict := NULL;
        v_detail := NULL;
        v_at := least(to_timestamp(c.made_at / 1000.0), to_timestamp(c.received_at / 1000.0));
        PERFORM set_config('teamwork.actor_id', c.person_id::text, true);
        PERFORM set_config('teamwork.received_at', to_timestamp(c.received_at / 1000.0)::text, true);
        PERFORM set_config('teamwork.field_change', c.change_id, true);

        IF c.rejection IS NOT NULL THEN
            v_conflict := 'rejected';
            v_detail := c.rejection;
        ELSE
            SELECT * INTO t FROM public.tasks WHERE id = c.task_id FOR UPDATE;
            IF NOT FOUND THEN
                v_conflict := 'deleted';
                v_detail := 'the task was deleted before the change reached the master';
            ELSIF t.status = 'cancelled' THEN
                v_conflict := 'cancelled';
                v_detail := 'the task was cancelled; the cancellation stands';
            ELSE
                v_moved := CASE WHEN v_team IS NOT NULL THEN t.team_id IS DISTINCT FROM v_team
                                ELSE t.team_id IS NOT NULL OR t.assignee_id IS DISTINCT FROM v_person END;
                SELECT array_agg(s ORDER BY s) INTO v_missing
                  FROM unnest(t.required_skills) s
                 WHERE NOT s = ANY (coalesce((SELECT p.skills FROM public.people p WHERE p.id = c.person_id), '{}'));
                v_items := NULL;
                IF t.checklist_id IS NOT NULL THEN
                    SELECT v.items INTO v_items FROM public.checklist_versions v
                     WHERE v.checklist_id = t.checklist_id AND v.version = t.checklist_version;
                END IF;
                IF c.operation = 'complete' THEN
                    IF t.status = 'completed' THEN
                        v_conflict := 'already_completed';
                        v_detail := format('already completed by person %s at %s; this completion was not applied',
                                           t.completed_by, t.completed_at);
                    ELSIF cardinality(public.teamwork_checklist_missing(v_items, t.answers)) > 0 THEN
                        v_conflict := 'missing_answers';
                        v_detail := format('task %s needs answers to %s before it is completed', t.id,
                                           array_to_string(public.teamwork_checklist_missing(v_items, t.answers), ', '));
                    ELSIF t.assignee_id IS DISTINCT FROM c.person_id AND v_missing IS NOT NULL THEN
                        v_conflict := 'missing_skills';
                        v_detail := format('task %s needs %s, which person %s does not have; only a manager can give it to them',
                                           t.id, array_to_string(v_missing, ', '), c.person_id);
                    ELSE
                        UPDATE public.tasks SET status = 'completed', completed_at = v_at, completed_by = c.person_id,
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
                        UPDATE public.tasks SET status = 'in_progress', started_at = coalesce(started_at, v_at) WHERE id = t.id;
                        v_applied := true;
                        v_changed := t.status <> 'in_progress';
                    END IF;
                ELSIF c.operation = 'reopen' THEN
                    IF t.status <> 'completed' OR t.completed_by IS DISTINCT FROM c.person_id THEN
                        v_conflict := 'not_completed';
                        v_detail := 'the master does not hold this worker''s completion to reopen';
                    ELSE
                        UPDATE public.tasks SET status = CASE WHEN started_at IS NOT NULL THEN 'in_progress'
                                                       WHEN assignee_id IS NULL THEN 'open' ELSE 'assigned' END,
                                         completed_at = NULL, completed_by = NULL, completion_note = NULL
                         WHERE id = t.id;
                        v_applied := true;
                        v_changed := true;
                    END IF;
                ELSIF c.operation = 'answer' THEN
                    SELECT i INTO v_item FROM jsonb_array_elements(coalesce(v_items, '[]')) i WHERE i ->> 'key' = c.item;
                    v_problem := CASE WHEN v_item IS NOT NULL THEN public.teamwork_checklist_problem(v_item, c.value) END;
                    IF v_moved THEN
                        v_conflict := 'moved';
                        v_detail := format('answered in %s, but the task had moved to %s', p_replica,
                                           coalesce('team ' || t.team_id, 'person ' || t.assignee_id));
                    ELSIF t.status = 'completed' THEN
                        v_conflict := 'already_completed';
                        v_detail := format('already completed by person %s at %s; the answer was not taken',
                                           t.completed_by, t.completed_at);
                    ELSIF t.assignee_id IS DISTINCT FROM c.person_id THEN
                        v_conflict := 'reassigned';
                        v_detail := format('answered by person %s while assigned to %s', c.person_id,
                                           coalesce('person ' || t.assignee_id, 'nobody'));
                    ELSIF v_item IS NULL THEN
                        v_conflict := 'invalid_answer';
                        v_detail := format('task %s has no checklist item %s', t.id, coalesce(c.item, 'NULL'));
                    ELSIF v_problem IS NOT NULL THEN
                        v_conflict := 'invalid_answer';
                        v_detail := format('%s: %s', c.item, v_problem);
                    ELSE
                        UPDATE public.tasks
                           SET answers = answers || jsonb_build_object(c.item, jsonb_build_object(
                                   'value', c.value, 'by', c.person_id, 'at', round(extract(epoch FROM v_at) * 1000)::bigint))
                         WHERE id = t.id;
                        v_applied := true;
                        v_changed := true;
                    END IF;
                ELSIF c.operation = 'attach' THEN
                    v_item := NULL;
                    IF c.item IS NOT NULL THEN
                        SELECT i INTO v_item FROM jsonb_array_elements(coalesce(v_items, '[]')) i WHERE i ->> 'key' = c.item;
                    END IF;
                    IF v_moved THEN
                        v_conflict := 'moved';
                        v_detail := format('attached in %s, but the task had moved to %s', p_replica,
                                           coalesce('team ' || t.team_id, 'person ' || t.assignee_id));
                    ELSIF t.status = 'completed' THEN
                        v_conflict := 'already_completed';
                        v_detail := format('already completed by person %s at %s; the file was not added',
                                           t.completed_by, t.completed_at);
                    ELSIF t.assignee_id IS DISTINCT FROM c.person_id THEN
                        v_conflict := 'reassigned';
                        v_detail := format('attached by person %s while assigned to %s', c.person_id,
                                           coalesce('person ' || t.assignee_id, 'nobody'));
                    ELSIF c.value IS NOT NULL OR c.blob IS NULL OR c.blob !~ '^[0-9a-f]{64}$' OR c.size IS NULL OR c.size < 1
                          OR c.size > 1073741824
                          OR c.media_type IS NULL
                          OR c.media_type NOT IN ('image/jpeg', 'image/png', 'image/heic', 'application/pdf') THEN
                        v_conflict := 'invalid_attachment';
                        v_detail := 'an attachment names a JPEG, PNG, HEIC or PDF file by its SHA-256, with its size';
                    ELSIF c.signer IS NOT NULL AND (octet_length(c.signer) > 200
                          OR btrim(c.signer, E' \t\n\r\u000B\u000C\u0085\u00A0\u2028\u2029') = ''
                          OR c.signer ~ '[\u0001-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]'
                          OR c.media_type NOT IN ('image/png', 'image/jpeg')) THEN
                        v_conflict := 'invalid_attachment';
                        v_detail := 'a signature is a PNG or JPEG image with the signer''s name on one line of at most 200 bytes';
                    ELSIF c.item IS NOT NULL AND (v_item IS NULL
                          OR NOT ((v_item ->> 'kind' = 'photo' AND c.signer IS NULL AND c.media_type <> 'application/pdf')
                                  OR (v_item ->> 'kind' = 'signature' AND c.signer IS NOT NULL))) THEN
                        v_conflict := 'invalid_attachment';
                        v_detail := format('task %s has no photo or signature item %s that this file answers', t.id, c.item);
                    ELSE
                        INSERT INTO public.attachments (task_id, person_id, change_id, item, sha256, size, media_type, signer,
                                                        captured_at, received_at)
                        VALUES (t.id, c.person_id, c.change_id, c.item, c.blob, c.size, c.media_type, c.signer, v_at,
                                to_timestamp(c.received_at / 1000.0))
                        ON CONFLICT (person_id, change_id) DO NOTHING;
                        IF c.item IS NOT NULL THEN
                            UPDATE public.tasks
                               SET answers = answers || jsonb_build_object(c.item, jsonb_build_object(
                                       'value', c.blob, 'by', c.person_id, 'at', round(extract(epoch FROM v_at) * 1000)::bigint))
                             WHERE id = t.id;
                            v_changed := true;
                        END IF;
                        v_applied := true;
                    END IF;
                ELSIF c.operation = 'use' THEN
                    v_part := NULL;
                    -- Cast only what has a quantity's shape (PL/pgSQL reads an IF's condition up to its THEN).
                    v_quantity := NULL;
                    IF c.value ~ '^[0-9]{1,6}(\.[0-9]{1,3})?$' THEN
                        v_quantity := c.value::numeric;
                    END IF;
                    IF c.item IS NOT NULL THEN
                        SELECT * INTO v_part FROM public.parts p WHERE lower(p.code) = lower(c.item);
                    END IF;
                    -- The person's line this change sets, if there is one (a removed line is one of quantity 0).
                    v_line := NULL;
                    SELECT m.id INTO v_line FROM public.task_materials m
                     WHERE m.task_id = t.id AND m.person_id = c.person_id
                       AND CASE WHEN v_part.id IS NOT NULL THEN m.part_id = v_part.id
                                ELSE m.part_id IS NULL AND lower(m.description) = lower(btrim(c.note)) END;
                    IF v_moved THEN
                        v_conflict := 'moved';
                        v_detail := format('used in %s, but the task had moved to %s', p_replica,
                                           coalesce('team ' || t.team_id, 'person ' || t.assignee_id));
                    ELSIF t.status = 'completed' THEN
                        v_conflict := 'already_completed';
                        v_detail := format('already completed by person %s at %s; what was used was not recorded',
                                           t.completed_by, t.completed_at);
                    ELSIF t.assignee_id IS DISTINCT FROM c.person_id THEN
                        v_conflict := 'reassigned';
                        v_detail := format('used by person %s while assigned to %s', c.person_id,
                                           coalesce('person ' || t.assignee_id, 'nobody'));
                    ELSIF v_quantity IS NULL OR v_quantity > 100000 THEN
                        v_conflict := 'invalid_material';
                        v_detail := 'a quantity is a number from 0 to 100000, at most 3 decimals';
                    ELSIF c.item IS NULL AND (c.note IS NULL OR octet_length(c.note) > 200
                          OR btrim(c.note, E' \t\n\r\u000B\u000C\u0085\u00A0\u2028\u2029') = ''
                          OR c.note ~ '[\u0001-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]') THEN
                        v_conflict := 'invalid_material';
                        v_detail := 'a line not in the catalogue is described in one line of 1 to 200 bytes';
                    ELSIF c.item IS NOT NULL AND c.note IS NOT NULL THEN
                        v_conflict := 'invalid_material';
                        v_detail := 'a part''s name comes from the catalogue: a use of a part carries no note';
                    ELSIF c.item IS NOT NULL AND v_part.id IS NULL THEN
                        v_conflict := 'invalid_material';
                        v_detail := format('no part %s in the catalogue', left(c.item, 40));
                    ELSIF v_part.retired_at IS NOT NULL AND v_quantity > 0
                          AND NOT EXISTS (SELECT 1 FROM public.task_materials m WHERE m.id = v_line AND m.quantity > 0) THEN
                        -- A retired part is not taken on a new line; one already on the task may still be corrected.
                        v_conflict := 'invalid_material';
                        v_detail := format('part %s is retired: it is no longer used', v_part.code);
                    ELSIF v_line IS NULL AND v_quantity > 0
                          AND (SELECT count(*) FROM public.task_materials m
                                WHERE m.task_id = t.id AND m.person_id = c.person_id AND m.quantity > 0) >= 100 THEN
                        v_conflict := 'invalid_material';
                        v_detail := 'a worker records at most 100 lines on a task';
                    ELSE
                        -- One statement sets the line (0 keeps it as removed), unless a later one was recorded already.
                        IF NOT public.teamwork_set_material_line(t.id, c.person_id, v_part.id, c.note, v_quantity, v_at, c.change_id,
                                                                 false) THEN
                            v_conflict := 'superseded';
                            v_detail := 'a later quantity for this line was recorded already (by a manager, or from another device)';
                        ELSE
                            v_applied := true;
                        END IF;
                    END IF;
                ELSIF c.operation = 'time' THEN
                    v_problem := public.teamwork_time_problem(c.item, c.value, to_timestamp(c.received_at / 1000.0) + interval '24 hours');
                    IF v_moved THEN
                        v_conflict := 'moved';
                        v_detail := format('time recorded in %s, but the task had moved to %s', p_replica,
                                           coalesce('team ' || t.team_id, 'person ' || t.assignee_id));
                    ELSIF c.note IS NOT NULL OR v_problem IS NOT NULL THEN
                        v_conflict := 'invalid_time';
                        v_detail := coalesce(v_problem, 'a time entry carries no note');
                    ELSIF public.teamwork_time_instant(split_part(c.value, '/', 1))
                          < to_timestamp(c.received_at / 1000.0) - interval '744 hours' THEN
                        -- TimeOnJob.recentDays: a worker's entry begins at most 31 days before it is sent.
                        v_conflict := 'invalid_time';
                        v_detail := 'a time entry begins at most 31 days before it is sent; a manager records older time';
                    ELSIF NOT public.teamwork_time_held(t.id, c.person_id) THEN
                        v_conflict := 'not_held';
                        v_detail := format('person %s never held task %s: time is recorded by who worked it', c.person_id, t.id);
                    ELSE
                        -- One writer of a person's entries at a time: an overlap is looked for and refused under it;
                        -- and no payroll close meanwhile (it waits for this transaction).
                        PERFORM 1 FROM public.people p WHERE p.id = c.person_id FOR NO KEY UPDATE;
                        LOCK TABLE public.payroll_closes IN SHARE MODE;
                        v_problem := coalesce(
                            public.teamwork_time_closed(t.id, c.person_id, c.item, public.teamwork_time_instant(split_part(c.value, '/', 1))),
                            'clash:' || public.teamwork_time_clash(t.id, c.person_id, c.item,
                                public.teamwork_time_instant(split_part(c.value, '/', 1)),
                                public.teamwork_time_instant(split_part(c.value, '/', 2))));
                        IF v_problem LIKE 'clash:%' THEN
                            v_conflict := 'time_overlap';
                            v_detail := substr(v_problem, 7);
                        ELSIF v_problem IS NOT NULL THEN
                            v_conflict := 'period_closed';
                            v_detail := v_problem;
                        ELSE
                            v_problem := public.teamwork_set_time_entry(t.id, c.person_id, c.item, c.value, 'worker', v_at, c.change_id);
                            IF v_problem = 'superseded' THEN
                                v_conflict := 'superseded';
                                v_detail := 'a later entry of this time was recorded already (from another device)';
                            ELSIF v_problem = 'corrected' THEN
                                v_conflict := 'corrected_by_manager';
                                v_detail := 'a manager corrected this time; a later entry from the field waits for a decision';
                            ELSE
                                v_applied := true;
                                -- Time entered after the job was done changes what it cost: billing hears again (not for the same again).
                                IF t.status = 'completed' AND v_problem = 'set' THEN
                                    PERFORM public.teamwork_outbox_add('task.costed', t.id,
                                        public.teamwork_outbox_payload('task.costed', to_jsonb(t)) -> 'data');
                                END IF;
                            END IF;
                        END IF;
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
                    ELSIF t.status = 'completed' THEN
                        v_conflict := 'already_completed';
                        v_detail := format('already completed by person %s at %s', t.completed_by, t.completed_at);
                    ELSIF NOT EXISTS (SELECT 1 FROM public.team_memberships m WHERE m.team_id = v_team AND m.person_id = c.person_id) THEN
                        v_conflict := 'not_a_member';
                        v_detail := format('person %s is no longer a member of team %s', c.person_id, v_team);
                    ELSIF EXISTS (SELECT 1 FROM public.people p WHERE p.id = c.person_id AND p.deactivated_at IS NOT NULL) THEN
                        v_conflict := 'not_a_member';
                        v_detail := format('person %s has left (deactivated); the task stays free for the team', c.person_id);
                    ELSIF v_missing IS NOT NULL THEN
                        v_conflict := 'missing_skills';
                        v_detail := format('task %s needs %s, which person %s does not have', t.id,
                                           array_to_string(v_missing, ', '), c.person_id);
                    ELSE
                        UPDATE public.tasks SET assignee_id = c.person_id WHERE id = t.id;
                        v_applied := true;
                        v_changed := true;
                    END IF;
                END IF;
            END IF;
        END IF;

        INSERT INTO public.field_changes (replica, position, change_id, person_id, task_id, operation, note, latitude, longitude,
                                   made_at, received_at, applied, conflict, detail, item, value)
        VALUES (p_replica, c.position, c.change_id, c.person_id, c.task_id, c.operation, c.note, c.latitude, c.longitude,
                to_timestamp(c.made_at / 1000.0), to_timestamp(c.received_at / 1000.0), v_applied, v_conflict, v_detail,
                left(c.item, 100), left(coalesce(c.value, c.blob), 2000))
        RETURNING id INTO v_ledger;

        -- The replica showed this change when it accepted it; the master's view goes back.
        IF NOT v_applied AND v_conflict IS DISTINCT FROM 'rejected' AND c.operation <> 'checkin' THEN
            PERFORM public.teamwork_feed_append('refusal', v_ledger, 'insert', v_team, NULL, v_person, NULL);
        END IF;

        -- Every change about a task leaves one history entry: the update it made,
        -- or, when it changed nothing, an entry saying what came in and why.
        IF c.task_id IS NOT NULL AND NOT v_changed THEN
            INSERT INTO public.task_history (task_id, action, actor_id, changes, field_change_id)
            SELECT c.task_id, 'field_change', c.person_id, jsonb_object_agg(k, jsonb_build_object('old', NULL, 'new', v)),
                   c.change_id
              FROM (VALUES ('operation', to_jsonb(c.operation)), ('applied', to_jsonb(v_applied)),
                           ('conflict', to_jsonb(v_conflict)), ('detail', to_jsonb(v_detail)), ('note', to_jsonb(c.note)),
                           ('item', to_jsonb(c.item)), ('value', to_jsonb(c.value)), ('blob', to_jsonb(c.blob)),
                           ('signer', to_jsonb(c.signer))
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
    PERFORM set_config('teamwork.received_at', '', true);
    INSERT INTO public.listener_cursors AS lc (source, position, change_id) VALUES (p_source, p_position, p_change_id)
    ON CONFLICT (source) DO UPDATE SET position = excluded.position, change_id = excluded.change_id, updated_at = now();
END
$$;
REVOKE ALL ON FUNCTION teamwork_apply_field_changes_in_replica(text, text, jsonb, bigint, text) FROM PUBLIC, teamwork_service;
