-- A manager corrects time on a task (docs/dispatch.md, "Time on the job"), at any
-- time, completed tasks included: sets person p_person's entry of kind p_kind (work
-- or travel) to the interval p_value (START/END in UTC, as a worker's 'time' change
-- carries it; no length removes the entry). The task's history names the manager
-- (teamwork_actor_id) with the entry before and after, and a completed task's costs
-- go to billing again (task.costed). Cancelled tasks included: the time was worked.
-- Refused with a reason (TWS01, TWS02) when the task is gone, the person unknown, the
-- entry malformed, ending before it starts or longer than a day, on days payroll
-- closed (teamwork_time_closed) or overlapping another of the person's entries
-- (teamwork_time_clash). A manager records time for anyone, held or not. Definer: the manager's role only reads
-- time_entries.
CREATE OR REPLACE FUNCTION teamwork_correct_time(p_task bigint, p_person bigint, p_kind text, p_value text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    t        public.tasks%ROWTYPE;
    e        public.time_entries%ROWTYPE;
    v_problem text;
    v_actor  bigint := public.teamwork_actor_id();
    v_before text;
    v_after  text;
BEGIN
    SELECT * INTO t FROM public.tasks WHERE id = p_task FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no task %', p_task USING ERRCODE = 'TWS02';
    END IF;
    -- A cancelled task's time was worked all the same: it may be corrected (or a worker's accepted).
    IF NOT EXISTS (SELECT 1 FROM public.people p WHERE p.id = p_person) THEN
        RAISE EXCEPTION 'no person %', p_person USING ERRCODE = 'TWS02';
    END IF;
    v_problem := public.teamwork_time_problem(p_kind, p_value, now() + interval '24 hours');
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION '%', v_problem USING ERRCODE = 'TWS01';
    END IF;
    -- One writer of a person's entries at a time; nothing on days payroll closed; no overlap.
    PERFORM 1 FROM public.people p WHERE p.id = p_person FOR NO KEY UPDATE;
    LOCK TABLE public.payroll_closes IN SHARE MODE;
    v_problem := coalesce(
        public.teamwork_time_closed(p_task, p_person, p_kind, public.teamwork_time_instant(split_part(p_value, '/', 1))),
        public.teamwork_time_clash(p_task, p_person, p_kind, public.teamwork_time_instant(split_part(p_value, '/', 1)),
                                   public.teamwork_time_instant(split_part(p_value, '/', 2))));
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION '%', v_problem USING ERRCODE = 'TWS01';
    END IF;
    SELECT * INTO e FROM public.time_entries x WHERE x.task_id = p_task AND x.person_id = p_person AND x.kind = p_kind;
    IF FOUND AND (e.ended_at IS NULL OR e.ended_at > e.started_at) THEN
        v_before := format('%s %s to %s (person %s)', p_kind, to_char(e.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                           coalesce(to_char(e.ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 'running'), p_person);
    END IF;
    IF public.teamwork_time_instant(split_part(p_value, '/', 2)) > public.teamwork_time_instant(split_part(p_value, '/', 1)) THEN
        v_after := format('%s %s to %s (person %s)', p_kind, split_part(p_value, '/', 1), split_part(p_value, '/', 2), p_person);
    END IF;
    PERFORM public.teamwork_set_time_entry(p_task, p_person, p_kind, p_value, 'manager', clock_timestamp(),
                                           'manager-' || coalesce(v_actor::text, 'unknown'));
    IF v_before IS NOT DISTINCT FROM v_after THEN
        RETURN;  -- nothing changed: no history, nothing to bill again
    END IF;
    INSERT INTO public.task_history (task_id, action, actor_id, changes)
    VALUES (p_task, 'updated', v_actor, jsonb_build_object('time', jsonb_build_object('old', v_before, 'new', v_after)));
    IF t.status = 'completed' THEN
        PERFORM public.teamwork_outbox_add('task.costed', p_task,
            public.teamwork_outbox_payload('task.costed', to_jsonb(t)) -> 'data');
    END IF;
END
$$;
REVOKE ALL ON FUNCTION teamwork_correct_time(bigint, bigint, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_correct_time(bigint, bigint, text, text) TO teamwork_manager;
