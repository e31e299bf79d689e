-- The tasks completed from p_from to p_to (both days, each task on its own clock: a
-- Stockholm job finished at 23:30 local time is that day's), of team p_team when
-- given, with what a report names them by: title, team slug, customer (its own, else
-- its site's; none once erased), the day. What `report materials` and `report labour`
-- read, written once.
CREATE OR REPLACE FUNCTION teamwork_completed_tasks(p_from date, p_to date, p_team bigint)
RETURNS TABLE (task_id bigint, title text, team text, customer text, completed_on date, completed_at timestamptz)
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT t.id, t.title, g.slug, c.name, (t.completed_at AT TIME ZONE t.time_zone)::date, t.completed_at
      FROM public.tasks t
      LEFT JOIN public.teams g ON g.id = t.team_id
      LEFT JOIN public.customers c ON c.erased_at IS NULL AND c.id = coalesce(t.customer_id,
                                          (SELECT l.customer_id FROM public.locations l WHERE l.id = t.location_id))
     WHERE t.status = 'completed'
       -- Every zone's day lies within two of UTC's: the range narrows, the task's own clock decides.
       AND t.completed_at >= ((p_from - 2)::timestamp AT TIME ZONE 'UTC')
       AND t.completed_at < ((p_to + 3)::timestamp AT TIME ZONE 'UTC')
       AND (t.completed_at AT TIME ZONE t.time_zone)::date BETWEEN p_from AND p_to
       AND (p_team IS NULL OR t.team_id = p_team)
$$;
