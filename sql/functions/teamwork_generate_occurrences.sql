-- Makes a plan's occurrences: one task per day given, at the instants the
-- caller expanded (Sources/TeamworkModel/RecurrenceRule.swift, in the plan's
-- zone), each (plan, day) once: ON CONFLICT DO NOTHING on tasks_plan_occurrence,
-- so a second run, or another process generating at the same time, makes
-- nothing twice. The plan is read under FOR SHARE and must still be at
-- p_version (-1 otherwise: the caller expands again) and not paused (0).
-- Returns how many tasks were made.
CREATE OR REPLACE FUNCTION teamwork_generate_occurrences(
    p_plan bigint, p_version integer, p_days date[], p_starts timestamptz[], p_ends timestamptz[], p_dues timestamptz[])
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    p    public.plans%ROWTYPE;
    made integer;
BEGIN
    SELECT * INTO p FROM public.plans WHERE id = p_plan FOR SHARE;
    IF NOT FOUND OR p.paused_at IS NOT NULL THEN
        RETURN 0;
    END IF;
    IF p.version <> p_version THEN
        RETURN -1;
    END IF;
    -- What the caller expanded is checked, not trusted: one day each, a sane count, real windows.
    IF cardinality(p_days) > 5000 OR cardinality(p_starts) <> cardinality(p_days) OR cardinality(p_ends) <> cardinality(p_days)
       OR cardinality(p_dues) <> cardinality(p_days)
       OR EXISTS (SELECT 1 FROM unnest(p_days, p_starts, p_ends, p_dues) AS d(day, starts, ends, due)
                   WHERE d.day IS NULL OR d.day < p.starts_on OR d.starts IS NULL OR d.ends <= d.starts
                      OR d.ends - d.starts > interval '31 days' OR d.due < d.starts) THEN
        RAISE EXCEPTION 'plan %: occurrences that are not the plan''s', p_plan USING ERRCODE = '22023';
    END IF;
    INSERT INTO public.tasks (title, description, priority, team_id, assignee_id, location_id, required_skills,
                              window_start, window_end, due_at, plan_id, plan_date, checklist_id, checklist_version,
                              duration_minutes)
    SELECT p.title, p.description, p.priority, p.team_id, p.assignee_id, p.location_id, p.required_skills,
           d.starts, d.ends, d.due, p.id, d.day, p.checklist_id,
           -- Each occurrence carries the plan's checklist as published when it is made, and keeps it.
           (SELECT max(v.version) FROM public.checklist_versions v WHERE v.checklist_id = p.checklist_id),
           p.task_minutes
      FROM unnest(p_days, p_starts, p_ends, p_dues) AS d(day, starts, ends, due)
     ORDER BY d.day
    ON CONFLICT (plan_id, plan_date) WHERE plan_id IS NOT NULL AND NOT plan_superseded DO NOTHING;
    GET DIAGNOSTICS made = ROW_COUNT;
    RETURN made;
END
$$;

-- Cancels a plan's occurrences from p_from through p_through (NULL: no end)
-- that nobody touched (still open or only given to the plan's assignee, never
-- changed since made: version 1) with p_reason, and takes them out of the
-- plan's (plan, day) uniqueness so that their days can be made anew. Touched
-- ones stand. Returns how many were cancelled.
CREATE OR REPLACE FUNCTION teamwork_supersede_occurrences(p_plan bigint, p_from date, p_through date, p_reason text)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    cancelled integer;
BEGIN
    UPDATE public.tasks k
       SET status = 'cancelled', cancel_reason = p_reason, plan_superseded = true
     WHERE k.plan_id = p_plan AND NOT k.plan_superseded AND k.plan_date >= p_from
       AND (p_through IS NULL OR k.plan_date <= p_through)
       AND k.status IN ('open', 'assigned') AND k.version = 1;
    GET DIAGNOSTICS cancelled = ROW_COUNT;
    RETURN cancelled;
END
$$;
