-- A worker change the master cannot take, for whatever reason, is set aside on
-- its own instead of holding back every later change of its replica; stored
-- functions search pg_temp last; the service changes tasks only through the
-- listener's function.

-- 'invalid': the master could not take the change at all (its detail says why).
ALTER TABLE field_changes DROP CONSTRAINT field_changes_conflict_check;
ALTER TABLE field_changes ADD CONSTRAINT field_changes_conflict_check
    CHECK (conflict IN ('rejected', 'deleted', 'cancelled', 'moved', 'reassigned', 'already_completed',
                        'not_completed', 'claimed_by_other', 'not_a_member', 'invalid'));

-- Records one change (a teamwork_worker_change as JSON) in the ledger as an
-- 'invalid' conflict with the reason, and moves the cursor of p_source past it,
-- in one transaction; the task is not touched and no history is written. Times
-- PostgreSQL cannot hold (or that no device could have made) become the time
-- the ledger records it. A change already in the ledger is left as it is.
CREATE FUNCTION teamwork_set_aside_field_change(
    p_replica text, p_source text, p_change jsonb, p_reason text, p_position bigint, p_change_id text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    c public.teamwork_worker_change;
    v_made timestamptz := now();
    v_received timestamptz := now();
BEGIN
    c := jsonb_populate_record(NULL::public.teamwork_worker_change, p_change);
    IF c.made_at BETWEEN 946684800000 AND (extract(epoch FROM now()) * 1000 + 86400000)::bigint THEN
        v_made := to_timestamp(c.made_at / 1000.0);
    END IF;
    IF c.received_at BETWEEN 946684800000 AND (extract(epoch FROM now()) * 1000 + 86400000)::bigint THEN
        v_received := to_timestamp(c.received_at / 1000.0);
    END IF;
    INSERT INTO public.field_changes (replica, position, change_id, person_id, task_id, operation, note,
                                      latitude, longitude, made_at, received_at, applied, conflict, detail)
    VALUES (p_replica, c.position, c.change_id, c.person_id,
            (SELECT t.id FROM public.tasks t WHERE t.id = c.task_id),
            CASE WHEN c.operation IN ('start', 'complete', 'reopen', 'claim', 'checkin') THEN c.operation ELSE 'checkin' END,
            left(c.note, 10000), c.latitude, c.longitude, v_made, v_received, false, 'invalid', left(p_reason, 1000))
    ON CONFLICT (person_id, change_id) DO NOTHING;
    INSERT INTO public.listener_cursors AS lc (source, position, change_id) VALUES (p_source, p_position, p_change_id)
    ON CONFLICT (source) DO UPDATE SET position = excluded.position, change_id = excluded.change_id, updated_at = now();
END
$$;
REVOKE ALL ON FUNCTION teamwork_set_aside_field_change(text, text, jsonb, text, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_set_aside_field_change(text, text, jsonb, text, bigint, text) TO teamwork_service;

-- pg_temp last: a session's temporary tables named like ours (task_history,
-- change_feed) cannot stand in for them inside these SECURITY DEFINER functions.
ALTER FUNCTION teamwork_feed_append(text, bigint, text, bigint, bigint, bigint, bigint)
    SET search_path = pg_catalog, public, pg_temp;
ALTER FUNCTION common_record_change() SET search_path = pg_catalog, public, pg_temp;
ALTER FUNCTION tasks_record_changes() SET search_path = pg_catalog, public, pg_temp;
ALTER FUNCTION teamwork_apply_field_changes(text, text, jsonb, bigint, text) SET search_path = pg_catalog, public, pg_temp;

-- The service writes tasks only through teamwork_apply_field_changes.
REVOKE UPDATE (status, assignee_id, started_at, completed_at, completed_by, completion_note) ON tasks FROM teamwork_service;

-- The service checks that the schema is current before it starts.
GRANT SELECT ON schema_migrations TO teamwork_service;
