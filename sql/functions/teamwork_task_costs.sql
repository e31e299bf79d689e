-- What was used on a task, as billing reads it (docs/integrations.md, "What a job
-- cost"): {"materials": [a line per person and part or described line: part (its
-- code, null for a described line), name, quantity, unit, unit_price, currency,
-- total (quantity × unit price, to the cent), worker {id, name}, recorded_at], "totals":
-- [{currency, amount}]}, amounts exact as text. The price is the one of the day the
-- line was first recorded (sql/0037); removed lines (quantity 0, sql/0039) are not
-- shown; `as_of` says when the costs were read, so billing keeps the latest.
-- "labour" is the time on it (sql/0042): work_minutes and travel_minutes (entries
-- that ended, each in whole minutes from its start's minute to its end's, as
-- TimeOnJob.minutes counts), `open` (entries still running, counted nowhere yet), and a line per
-- person and kind: kind, worker {id, name}, started_at, ended_at, minutes, source
-- (auto: their start and completion; worker: entered; manager: corrected).
CREATE OR REPLACE FUNCTION teamwork_task_costs(p_task bigint) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $$
    WITH lines AS (
        SELECT p.code, coalesce(p.name, m.description) AS name, trim_scale(m.quantity) AS quantity, m.unit,
               trim_scale(m.unit_price) AS unit_price, m.currency, round(m.quantity * m.unit_price, 2) AS total,
               m.person_id, w.first_name || ' ' || w.last_name AS worker, m.recorded_at
          FROM task_materials m LEFT JOIN parts p ON p.id = m.part_id LEFT JOIN people w ON w.id = m.person_id
         WHERE m.task_id = p_task AND m.quantity > 0
    )
    SELECT jsonb_build_object(
        -- When these costs were read (under the task's lock): of two task.costed, the later as_of stands.
        'as_of', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'materials', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                       'part', l.code, 'name', l.name, 'quantity', l.quantity::text, 'unit', l.unit,
                       'unit_price', l.unit_price::text, 'currency', l.currency, 'total', l.total::text,
                       'worker', jsonb_build_object('id', l.person_id, 'name', l.worker),
                       'recorded_at', to_char(l.recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                   ORDER BY l.code IS NULL, lower(l.code), lower(l.name), l.person_id)
              FROM lines l), '[]'::jsonb),
        'labour', (
            SELECT jsonb_build_object(
                       'work_minutes', coalesce(sum(e.minutes) FILTER (WHERE e.kind = 'work'), 0),
                       'travel_minutes', coalesce(sum(e.minutes) FILTER (WHERE e.kind = 'travel'), 0),
                       'open', count(*) FILTER (WHERE e.ended_at IS NULL),
                       'entries', coalesce(jsonb_agg(jsonb_build_object(
                                      'kind', e.kind, 'worker', jsonb_build_object('id', e.person_id, 'name', e.worker),
                                      'started_at', to_char(e.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                                      'ended_at', to_char(e.ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                                      'minutes', e.minutes, 'source', e.source)
                                  ORDER BY e.started_at, e.person_id, e.kind) FILTER (WHERE e.ended_at IS NOT NULL), '[]'::jsonb))
              FROM (SELECT x.*, w.first_name || ' ' || w.last_name AS worker,
                           ((extract(epoch FROM date_trunc('minute', x.ended_at)) - extract(epoch FROM date_trunc('minute', x.started_at))) / 60)::integer AS minutes
                      FROM time_entries x LEFT JOIN people w ON w.id = x.person_id
                     WHERE x.task_id = p_task AND (x.ended_at IS NULL OR x.ended_at > x.started_at)) e),
        'totals', coalesce((
            SELECT jsonb_agg(jsonb_build_object('currency', t.currency, 'amount', t.amount::text) ORDER BY t.currency)
              FROM (SELECT l.currency, sum(l.total) AS amount FROM lines l WHERE l.currency IS NOT NULL GROUP BY l.currency) t),
            '[]'::jsonb))
$$;
REVOKE ALL ON FUNCTION teamwork_task_costs(bigint) FROM PUBLIC;
