-- A manager corrects what was used on a task (docs/dispatch.md, "Parts"), at any
-- time, completed tasks included: sets person p_person's line for part p_part (its
-- code) or, with no part, for the line described p_description, to p_quantity (0
-- removes it). A new line takes the catalogue's unit and price of now; a line corrected
-- keeps those it was first recorded with. The task's history names
-- the manager (teamwork_actor_id) with the line before and after, and a completed
-- task's costs go to billing again (task.costed). Refused with a reason (TWS01,
-- TWS02) when the task is gone or cancelled, the person unknown, the part not in the
-- catalogue (or retired, for a new line), the quantity or description malformed.
-- Definer: the manager's role only reads task_materials.
CREATE OR REPLACE FUNCTION teamwork_correct_material(
    p_task bigint, p_person bigint, p_part text, p_description text, p_quantity text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    t          public.tasks%ROWTYPE;
    v_part     public.parts%ROWTYPE;
    v_quantity numeric;
    v_before   numeric;
    v_actor    bigint := public.teamwork_actor_id();
    v_label    text;
BEGIN
    SELECT * INTO t FROM public.tasks WHERE id = p_task FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no task %', p_task USING ERRCODE = 'TWS02';
    END IF;
    IF t.status = 'cancelled' THEN
        RAISE EXCEPTION 'task % was cancelled: nothing was used on it', p_task USING ERRCODE = 'TWS01';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM public.people p WHERE p.id = p_person) THEN
        RAISE EXCEPTION 'no person %', p_person USING ERRCODE = 'TWS02';
    END IF;
    IF p_quantity ~ '^[0-9]{1,6}(\.[0-9]{1,3})?$' THEN
        v_quantity := p_quantity::numeric;
    END IF;
    IF v_quantity IS NULL OR v_quantity > 100000 THEN
        RAISE EXCEPTION 'a quantity is a number from 0 to 100000, at most 3 decimals' USING ERRCODE = 'TWS01';
    END IF;
    IF (p_part IS NULL) = (p_description IS NULL) THEN
        RAISE EXCEPTION 'name a part or describe a line, not both' USING ERRCODE = 'TWS01';
    END IF;
    IF p_part IS NOT NULL THEN
        SELECT * INTO v_part FROM public.parts p WHERE lower(p.code) = lower(p_part);
        IF NOT FOUND THEN
            RAISE EXCEPTION 'no part % in the catalogue', left(p_part, 40) USING ERRCODE = 'TWS02';
        END IF;
        SELECT m.quantity INTO v_before FROM public.task_materials m
         WHERE m.task_id = p_task AND m.person_id = p_person AND m.part_id = v_part.id AND m.quantity > 0;
        IF v_before IS NULL AND v_part.retired_at IS NOT NULL AND v_quantity > 0 THEN
            RAISE EXCEPTION 'part % is retired: it is no longer used', v_part.code USING ERRCODE = 'TWS01';
        END IF;
        v_label := v_part.code;
    ELSE
        IF octet_length(p_description) > 200 OR btrim(p_description, E' \t\n\r\u000B\u000C\u0085\u00A0\u2028\u2029') = ''
           OR p_description ~ '[\u0001-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]' THEN
            RAISE EXCEPTION 'a line not in the catalogue is described in one line of 1 to 200 bytes' USING ERRCODE = 'TWS01';
        END IF;
        SELECT m.quantity INTO v_before FROM public.task_materials m
         WHERE m.task_id = p_task AND m.person_id = p_person AND m.part_id IS NULL
           AND lower(m.description) = lower(btrim(p_description)) AND m.quantity > 0;
        v_label := btrim(p_description);
    END IF;
    -- One statement sets the line (0 keeps it as removed: an older change arriving late cannot bring it back).
    PERFORM public.teamwork_set_material_line(p_task, p_person, v_part.id, p_description, v_quantity, clock_timestamp(),
                                              'manager-' || coalesce(v_actor::text, 'unknown'), true);
    IF v_before IS NOT DISTINCT FROM nullif(v_quantity, 0) THEN
        RETURN;  -- nothing changed: no history, nothing to bill again
    END IF;
    INSERT INTO public.task_history (task_id, action, actor_id, changes)
    VALUES (p_task, 'updated', v_actor, jsonb_build_object(
        'used', jsonb_build_object(
            'old', CASE WHEN v_before IS NOT NULL THEN format('%s %s (person %s)', trim_scale(v_before), v_label, p_person) END,
            'new', CASE WHEN v_quantity > 0 THEN format('%s %s (person %s)', trim_scale(v_quantity), v_label, p_person) END)));
    IF t.status = 'completed' THEN
        PERFORM public.teamwork_outbox_add('task.costed', p_task,
            public.teamwork_outbox_payload('task.costed', to_jsonb(t)) -> 'data');
    END IF;
END
$$;
REVOKE ALL ON FUNCTION teamwork_correct_material(bigint, bigint, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_correct_material(bigint, bigint, text, text, text) TO teamwork_manager;
