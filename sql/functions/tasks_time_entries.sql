-- Time on the job from the worker's own actions (sql/0042 says the rules), once per
-- statement on tasks, set-based, so the listener's bulk paths pay one probe when
-- no task's status, assignee or day changed. Completions come first: a batch that
-- completes one task and starts the next in one statement opens the travel and
-- then ends it.
--
-- Travel that arrives counts from the later of its own start and the end of the
-- person's last work before they arrived (teamwork_travel_from): however their
-- changes were batched, a drive never overlaps a job they did on the way.
--
-- An entry ends and counts only as a worker's own entry would (teamwork_time_counts:
-- a day long at most, recent, not on days payroll closed, overlapping nothing else
-- of theirs); otherwise it stays open, counted nowhere, and a closed one on days
-- payroll closed never runs again, however the device dated the work.
CREATE OR REPLACE FUNCTION tasks_time_entries() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM new_rows n JOIN old_rows o ON o.id = n.id
         WHERE n.status IS DISTINCT FROM o.status OR n.assignee_id IS DISTINCT FROM o.assignee_id
            OR coalesce(n.planned_start, n.window_start, n.due_at) IS DISTINCT FROM coalesce(o.planned_start, o.window_start, o.due_at))
    THEN
        RETURN NULL;
    END IF;

    -- Completed by a worker: their work ends (begun at the task's start, unless someone
    -- else already has work on it).
    -- (Of no length when both came in the same second: it ends the running entry all the same.)
    INSERT INTO public.time_entries AS e (task_id, person_id, kind, started_at, ended_at, source, recorded_at)
    SELECT n.id, n.completed_by, 'work', coalesce(n.started_at, n.completed_at),
           CASE WHEN public.teamwork_time_counts(n.id, n.completed_by, 'work', coalesce(n.started_at, n.completed_at), n.completed_at)
                THEN n.completed_at END,
           'auto', n.completed_at
      FROM new_rows n JOIN old_rows o ON o.id = n.id
     WHERE n.status = 'completed' AND o.status IS DISTINCT FROM 'completed' AND n.completed_by IS NOT NULL
       AND n.completed_at IS NOT NULL AND coalesce(n.started_at, n.completed_at) <= n.completed_at
       AND (NOT EXISTS (SELECT 1 FROM public.time_entries x WHERE x.task_id = n.id AND x.kind = 'work' AND x.person_id <> n.completed_by)
            OR EXISTS (SELECT 1 FROM public.time_entries x WHERE x.task_id = n.id AND x.kind = 'work' AND x.person_id = n.completed_by))
    -- recorded_at is the completion: on a conflict it ends the running entry.
    ON CONFLICT (task_id, person_id, kind) DO UPDATE SET ended_at = excluded.recorded_at, recorded_at = excluded.recorded_at
     WHERE e.source = 'auto' AND public.teamwork_time_counts(e.task_id, e.person_id, 'work', e.started_at, excluded.recorded_at);

    -- A start folded into its completion (one batch) arrived there too: travel there ends
    -- at the start, and travel begun to any other task is dropped (they went here instead).
    WITH arrived AS (
        SELECT n.id, n.completed_by AS person, coalesce(n.started_at, n.completed_at) AS at
          FROM new_rows n JOIN old_rows o ON o.id = n.id
         WHERE n.status = 'completed' AND o.status IS DISTINCT FROM 'completed' AND n.completed_by IS NOT NULL
           AND n.completed_at IS NOT NULL AND o.status IS DISTINCT FROM 'in_progress'
    ), ended AS (
        UPDATE public.time_entries e
           SET started_at = public.teamwork_travel_from(a.person, e.started_at, a.at), ended_at = a.at, recorded_at = a.at
          FROM arrived a
         WHERE e.task_id = a.id AND e.person_id = a.person AND e.kind = 'travel' AND e.source = 'auto' AND e.ended_at IS NULL
           AND a.at >= e.started_at
           AND public.teamwork_time_counts(e.task_id, e.person_id, 'travel',
                                           public.teamwork_travel_from(a.person, e.started_at, a.at), a.at)
    )
    DELETE FROM public.time_entries e USING arrived a
     WHERE e.person_id = a.person AND e.task_id <> a.id AND e.kind = 'travel' AND e.source = 'auto'
       AND e.ended_at IS NULL AND e.started_at <= a.at;

    -- Their travel to the next task of the day (on the task's clock) begins; a next task this
    -- same statement started already has its travel ended there.
    INSERT INTO public.time_entries (task_id, person_id, kind, started_at, ended_at, source, recorded_at)
    SELECT nx.id, n.completed_by, 'travel', public.teamwork_travel_from(n.completed_by, n.completed_at, nx.started_at),
           CASE WHEN public.teamwork_time_counts(nx.id, n.completed_by, 'travel',
                                                 public.teamwork_travel_from(n.completed_by, n.completed_at, nx.started_at),
                                                 nx.started_at)
                THEN nx.started_at END, 'auto',
           coalesce(nx.started_at, n.completed_at)
      FROM new_rows n JOIN old_rows o ON o.id = n.id
      CROSS JOIN LATERAL (
          SELECT t.id, t.started_at FROM public.tasks t
           WHERE t.assignee_id = n.completed_by AND t.id <> n.id AND t.status <> 'cancelled'
             AND (t.started_at IS NULL OR t.started_at >= n.completed_at)
             AND (t.completed_at IS NULL OR t.completed_at >= n.completed_at)
             AND (coalesce(t.planned_start, t.window_start, t.due_at) AT TIME ZONE n.time_zone)::date
                 = (n.completed_at AT TIME ZONE n.time_zone)::date
           ORDER BY coalesce(t.planned_start, t.window_start, t.due_at), t.id LIMIT 1) nx
     WHERE n.status = 'completed' AND o.status IS DISTINCT FROM 'completed' AND n.completed_by IS NOT NULL
       AND n.completed_at IS NOT NULL
    ON CONFLICT (task_id, person_id, kind) DO NOTHING;

    -- Started (or taken up again, reopened) by its assignee: their work runs (a closed automatic
    -- entry runs again from its start: one sitting, counted to the next completion), their travel
    -- there ends, and travel they had begun to any other task is dropped (they went here instead).
    WITH started AS (
        SELECT n.id, n.assignee_id AS person, n.started_at AS at,
               greatest(n.started_at, o.completed_at) AS since
          FROM new_rows n JOIN old_rows o ON o.id = n.id
         WHERE n.status = 'in_progress' AND o.status IS DISTINCT FROM 'in_progress'
           AND n.assignee_id IS NOT NULL AND n.started_at IS NOT NULL
    ), work AS (
        INSERT INTO public.time_entries AS e (task_id, person_id, kind, started_at, source, recorded_at)
        SELECT s.id, s.person, 'work', s.at, 'auto', s.at FROM started s
        ON CONFLICT (task_id, person_id, kind) DO UPDATE SET ended_at = NULL
         WHERE e.source = 'auto' AND e.ended_at IS NOT NULL
           AND public.teamwork_time_closed(e.task_id, e.person_id, 'work', e.started_at) IS NULL
    ), arrived AS (
        UPDATE public.time_entries e
           SET started_at = public.teamwork_travel_from(s.person, e.started_at, s.at), ended_at = s.at, recorded_at = s.at
          FROM started s
         WHERE e.task_id = s.id AND e.person_id = s.person AND e.kind = 'travel' AND e.source = 'auto' AND e.ended_at IS NULL
           AND s.at >= e.started_at
           AND public.teamwork_time_counts(e.task_id, e.person_id, 'travel',
                                           public.teamwork_travel_from(s.person, e.started_at, s.at), s.at)
    )
    DELETE FROM public.time_entries e USING started s
     WHERE e.person_id = s.person AND e.task_id <> s.id AND e.kind = 'travel' AND e.source = 'auto'
       AND e.ended_at IS NULL AND e.started_at <= s.since;

    -- The task left someone (reassigned, cancelled, moved to another day): their travel
    -- there that never arrived is dropped; their running work stops now (a cancellation
    -- stops everyone's, its assignee's too).
    WITH left_behind AS (
        SELECT n.id, n.assignee_id AS assignee, n.status = 'cancelled' AS cancelled, n.status = 'cancelled' OR
               (coalesce(n.planned_start, n.window_start, n.due_at) AT TIME ZONE n.time_zone)::date
                   IS DISTINCT FROM (coalesce(o.planned_start, o.window_start, o.due_at) AT TIME ZONE o.time_zone)::date AS everyone
          FROM new_rows n JOIN old_rows o ON o.id = n.id
         WHERE (n.status = 'cancelled' AND o.status IS DISTINCT FROM 'cancelled')
            OR n.assignee_id IS DISTINCT FROM o.assignee_id
            OR (n.started_at IS NULL AND (coalesce(n.planned_start, n.window_start, n.due_at) AT TIME ZONE n.time_zone)::date
                   IS DISTINCT FROM (coalesce(o.planned_start, o.window_start, o.due_at) AT TIME ZONE o.time_zone)::date)
    ), dropped AS (
        DELETE FROM public.time_entries e USING left_behind l
         WHERE e.task_id = l.id AND e.kind = 'travel' AND e.source = 'auto' AND e.ended_at IS NULL
           AND (l.everyone OR e.person_id IS DISTINCT FROM l.assignee)
    )
    UPDATE public.time_entries e SET ended_at = now(), recorded_at = now()
      FROM left_behind l
     WHERE e.task_id = l.id AND e.kind = 'work' AND e.source = 'auto' AND e.ended_at IS NULL
       AND (l.cancelled OR e.person_id IS DISTINCT FROM l.assignee)
       AND public.teamwork_time_counts(e.task_id, e.person_id, 'work', e.started_at, now());
    RETURN NULL;
END
$$;
