-- Why an entry of person p_person of kind p_kind on task p_task beginning at
-- p_from may not be recorded because payroll closed its days, or NULL: it begins
-- on or before the last day closed (payroll_closes, on the task's clock), or the
-- entry it would replace or remove does. Managers and workers alike.
CREATE OR REPLACE FUNCTION teamwork_time_closed(p_task bigint, p_person bigint, p_kind text, p_from timestamptz)
RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT format('payroll closed the days up to %s (week %s): time on them is not changed', c.through, c.week)
      FROM (SELECT p.through, p.week FROM public.payroll_closes p ORDER BY p.through DESC, p.id DESC LIMIT 1) c,
           public.tasks t
     WHERE t.id = p_task
       AND ((p_from AT TIME ZONE coalesce(t.time_zone, 'UTC'))::date <= c.through
            OR EXISTS (SELECT 1 FROM public.time_entries e
                        WHERE e.task_id = p_task AND e.person_id = p_person AND e.kind = p_kind AND e.ended_at > e.started_at
                          AND (e.started_at AT TIME ZONE coalesce(t.time_zone, 'UTC'))::date <= c.through))
$$;
