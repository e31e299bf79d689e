-- An instant of a time entry's interval (TimeOnJob.swift): exactly
-- 2026-11-30T08:00:00Z, a day that exists, in UTC to the second; NULL for
-- anything else (a cast that fails is not an error: the change is refused).
CREATE OR REPLACE FUNCTION teamwork_time_instant(p_text text) RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_at timestamptz;
BEGIN
    IF p_text IS NULL OR p_text !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$' THEN
        RETURN NULL;
    END IF;
    v_at := p_text::timestamptz;
    -- 24:00:00 or a day 31 that a cast would roll over is not the instant written.
    IF to_char(v_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') <> p_text THEN
        RETURN NULL;
    END IF;
    RETURN v_at;
EXCEPTION WHEN datetime_field_overflow OR invalid_datetime_format THEN
    RETURN NULL;
END
$$;
