-- Records one change (a teamwork_worker_change as JSON) in the ledger as an
-- 'invalid' conflict with the reason, and moves the cursor of p_source past it,
-- in one transaction; the task is not touched and no history is written, but
-- a 'refusal' in the change feed puts the master's view of the task back in
-- the replica, which had shown the change, with the reason. Times
-- PostgreSQL cannot hold (or that no device could have made) become the time
-- the ledger records it. A change already in the ledger is left as it is.
CREATE OR REPLACE FUNCTION teamwork_set_aside_field_change(
    p_replica text, p_source text, p_change jsonb, p_reason text, p_position bigint, p_change_id text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    c public.teamwork_worker_change;
    v_made timestamptz := now();
    v_received timestamptz := now();
    v_ledger   bigint;
BEGIN
    c := jsonb_populate_record(NULL::public.teamwork_worker_change, p_change);
    IF c.made_at BETWEEN 946684800000 AND (extract(epoch FROM now()) * 1000 + 86400000)::bigint THEN
        v_made := to_timestamp(c.made_at / 1000.0);
    END IF;
    IF c.received_at BETWEEN 946684800000 AND (extract(epoch FROM now()) * 1000 + 86400000)::bigint THEN
        v_received := to_timestamp(c.received_at / 1000.0);
    END IF;
    INSERT INTO public.field_changes (replica, position, change_id, person_id, task_id, operation, note,
                                      latitude, longitude, made_at, received_at, applied, conflict, detail, item, value)
    VALUES (p_replica, c.position, c.change_id, c.person_id,
            (SELECT t.id FROM public.tasks t WHERE t.id = c.task_id),
            CASE WHEN c.operation IN ('start', 'complete', 'reopen', 'claim', 'checkin', 'answer', 'attach', 'use', 'time') THEN c.operation ELSE 'checkin' END,
            left(c.note, 10000), c.latitude, c.longitude, v_made, v_received, false, 'invalid', left(p_reason, 1000),
            left(c.item, 100), left(coalesce(c.value, c.blob), 2000))
    ON CONFLICT (person_id, change_id) DO NOTHING
    RETURNING id INTO v_ledger;
    IF v_ledger IS NOT NULL AND c.rejection IS NULL THEN
        PERFORM public.teamwork_feed_append('refusal', v_ledger, 'insert',
            CASE WHEN p_replica ~ '^team-[0-9]+$' THEN substr(p_replica, 6)::bigint END, NULL,
            CASE WHEN p_replica ~ '^person-[0-9]+$' THEN substr(p_replica, 8)::bigint END, NULL);
    END IF;
    INSERT INTO public.listener_cursors AS lc (source, position, change_id) VALUES (p_source, p_position, p_change_id)
    ON CONFLICT (source) DO UPDATE SET position = excluded.position, change_id = excluded.change_id, updated_at = now();
END
$$;
REVOKE ALL ON FUNCTION teamwork_set_aside_field_change(text, text, jsonb, text, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_set_aside_field_change(text, text, jsonb, text, bigint, text) TO teamwork_service;
