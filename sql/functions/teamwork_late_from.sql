-- When a task still to be done becomes late: its due time or the end of its
-- appointment window, whichever comes first (NULL when it has neither). The
-- one rule the report, `task list --overdue` and the workload read in SQL;
-- FieldTask.isLate (TeamworkModel) says the same for the tools and the board.
CREATE OR REPLACE FUNCTION teamwork_late_from(p_due timestamptz, p_window_end timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog AS $$
    SELECT least(p_due, p_window_end)
$$;
