-- Why p_value is not a time entry of kind p_kind that may end by p_latest, or NULL
-- (TimeOnJob.swift says the same on devices): work or travel, an interval
-- START/END of two instants in UTC that exist (teamwork_time_instant), ending no
-- earlier than it starts and at most 24 hours later, after 2000-01-01. The field
-- change 'time' and a manager's correction both ask it.
CREATE OR REPLACE FUNCTION teamwork_time_problem(p_kind text, p_value text, p_latest timestamptz) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_from timestamptz := public.teamwork_time_instant(split_part(p_value, '/', 1));
    v_to   timestamptz := public.teamwork_time_instant(split_part(p_value, '/', 2));
BEGIN
    IF p_kind IS NULL OR p_kind NOT IN ('work', 'travel') THEN
        RETURN 'a time entry is work or travel';
    ELSIF v_from IS NULL OR v_to IS NULL OR p_value !~ '^[^/]+/[^/]+$' THEN
        RETURN 'a time entry is a start and an end in UTC, like 2026-11-30T08:00:00Z/2026-11-30T10:30:00Z';
    ELSIF v_to < v_from THEN
        RETURN 'a time entry ends after it starts';
    ELSIF v_to - v_from > interval '24 hours' THEN
        RETURN 'a time entry lasts at most 24 hours';
    ELSIF v_from < '2000-01-01T00:00:00Z'::timestamptz OR v_to > p_latest THEN
        RETURN 'a time entry is after 2000-01-01 and ends at most a day after the server''s clock';
    END IF;
    RETURN NULL;
END
$$;
