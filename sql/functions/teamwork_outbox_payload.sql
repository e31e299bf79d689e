-- An event's body as receivers get it (Standard Webhooks' shape): its type,
-- when it happened (UTC, to the millisecond) and the task as it now stands
-- (with its checklist's answers for checklist.completed).
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
                    ELSE '{}'::jsonb END)
$$;
