-- Why person p_person's entry of kind p_kind on task p_task from p_from to p_to
-- cannot be kept beside their other entries, or NULL: a person's entries never
-- overlap (work or travel, across tasks; one ending as the next begins is fine).
-- The entry it would replace (same task and kind) is not counted, nor entries
-- still running or removed (of no length). Names the first clash, as
-- TimeOnJob.clash does on devices. An interval of no length removes an entry and
-- clashes with nothing.
CREATE OR REPLACE FUNCTION teamwork_time_clash(
    p_task bigint, p_person bigint, p_kind text, p_from timestamptz, p_to timestamptz) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT format('it overlaps %s on task %s from %s to %s', e.kind, e.task_id,
                  to_char(e.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                  to_char(e.ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
      FROM public.time_entries e
     WHERE p_to > p_from AND e.person_id = p_person AND e.ended_at > e.started_at
       AND NOT (e.task_id = p_task AND e.kind = p_kind)
       AND e.started_at < p_to AND e.ended_at > p_from
       -- An entry lasts at most a day (time_entries' CHECK): only those begun since the day before can reach it.
       AND e.started_at > p_from - interval '24 hours'
     ORDER BY e.started_at, e.task_id, e.kind
     LIMIT 1
$$;
