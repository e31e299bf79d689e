-- An event's body as receivers get it (Standard Webhooks' shape): its type,
-- when it happened (UTC, to the millisecond) and the task as it now stands
-- (with its checklist's answers for checklist.completed). A completion says
-- what billing needs without asking back (issue 50): who did it, the site, the
-- customer (id and name; never their contact details), when work started and
-- ended, the minutes on site between, the checklist with its answers, and (with
-- task.costed) the materials used and their totals.
CREATE OR REPLACE FUNCTION teamwork_outbox_payload(p_event text, p_task jsonb) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT jsonb_build_object(
        'type', p_event,
        'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'data', jsonb_build_object(
            'id', p_task -> 'id', 'title', p_task -> 'title', 'status', p_task -> 'status',
            'priority', p_task -> 'priority', 'team_id', p_task -> 'team_id', 'assignee_id', p_task -> 'assignee_id',
            'location_id', p_task -> 'location_id', 'due_at', p_task -> 'due_at',
            'window_start', p_task -> 'window_start', 'window_end', p_task -> 'window_end',
            'time_zone', p_task -> 'time_zone', 'planned_start', p_task -> 'planned_start',
            'completed_at', p_task -> 'completed_at', 'completed_by', p_task -> 'completed_by',
            'completion_note', p_task -> 'completion_note', 'version', p_task -> 'version')
            || CASE WHEN p_event = 'checklist.completed'
                    THEN jsonb_build_object('checklist_id', p_task -> 'checklist_id',
                                            'checklist_version', p_task -> 'checklist_version', 'answers', p_task -> 'answers')
                    ELSE '{}'::jsonb END
            -- What the job cost: the materials used and their totals (teamwork_task_costs).
            || CASE WHEN p_event IN ('task.completed', 'task.costed')
                    THEN public.teamwork_task_costs((p_task ->> 'id')::bigint) ELSE '{}'::jsonb END
            || CASE WHEN p_event = 'task.completed' THEN jsonb_build_object(
                    'started_at', p_task -> 'started_at',
                    'minutes_on_site', CASE WHEN p_task ->> 'started_at' IS NOT NULL AND p_task ->> 'completed_at' IS NOT NULL
                        THEN greatest(0, round(extract(epoch FROM (p_task ->> 'completed_at')::timestamptz
                                                                  - (p_task ->> 'started_at')::timestamptz) / 60))::integer END,
                    'worker', (SELECT jsonb_build_object('id', p.id, 'name', p.first_name || ' ' || p.last_name)
                                 FROM people p WHERE p.id = (p_task ->> 'completed_by')::bigint),
                    'site', (SELECT jsonb_build_object(
                                 'id', l.id, 'name', l.name, 'latitude', l.latitude, 'longitude', l.longitude,
                                 'address', concat_ws(', ', nullif(l.street, ''), nullif(trim(l.postal_code || ' ' || l.city), ''),
                                                      nullif(l.region, ''), nullif(l.country, '')))
                               FROM locations l WHERE l.id = (p_task ->> 'location_id')::bigint),
                    'customer', (SELECT jsonb_build_object('id', c.id, 'name', c.name) FROM customers c
                                  WHERE c.erased_at IS NULL AND c.id = coalesce((p_task ->> 'customer_id')::bigint,
                                        (SELECT l.customer_id FROM locations l WHERE l.id = (p_task ->> 'location_id')::bigint))),
                    'checklist', (SELECT jsonb_build_object(
                                      'name', k.name, 'version', v.version, 'items', jsonb_array_length(v.items),
                                      'answered', (SELECT count(*) FROM jsonb_object_keys(coalesce(p_task -> 'answers', '{}'::jsonb))),
                                      'answers', coalesce(p_task -> 'answers', '{}'::jsonb))
                                    FROM checklists k JOIN checklist_versions v ON v.checklist_id = k.id
                                   WHERE k.id = (p_task ->> 'checklist_id')::bigint
                                     AND v.version = (p_task ->> 'checklist_version')::integer))
                ELSE '{}'::jsonb END)
$$;
