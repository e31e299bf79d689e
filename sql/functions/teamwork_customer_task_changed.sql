-- What a change to one task means for its customer (docs/integrations.md):
-- * it gets a window, or its window or customer changes, while open: the
--   appointment's SEQUENCE rises (the older links stop answering), any answer is
--   forgotten, and "booked" (the first window, or a customer who had none of it
--   before) or "changed" is queued; a customer it is no longer for is sent
--   "cancelled" at that sequence;
-- * it loses its customer (its own, or its site's), or is cancelled after
--   something was booked: SEQUENCE rises and "cancelled" goes to whom it was for;
-- * it is completed: "done", and the worker's next task of the same day on its
--   clock, starting within four hours (in planned order), gets "on my way" when
--   it has a customer who has not cancelled.
-- p_old_exists is false for a new task (the p_old_* are then NULL).
CREATE OR REPLACE FUNCTION teamwork_customer_task_changed(
    p_task bigint, p_status text, p_start timestamptz, p_end timestamptz, p_assignee bigint, p_customer bigint,
    p_old_exists boolean, p_old_status text, p_old_start timestamptz, p_old_end timestamptz, p_old_customer bigint
) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_sequence integer;
    v_was bigint;
    v_next bigint;
    v_next_customer bigint;
BEGIN
    -- An erased customer is no one's to tell.
    IF p_customer IS NOT NULL AND EXISTS (SELECT 1 FROM public.customers c WHERE c.id = p_customer AND c.erased_at IS NOT NULL) THEN
        p_customer := NULL;
    END IF;
    SELECT a.customer_id INTO v_was FROM public.appointments a WHERE a.task_id = p_task;
    IF p_customer IS NOT NULL AND p_start IS NOT NULL AND p_status NOT IN ('completed', 'cancelled')
       AND (NOT p_old_exists OR (p_start, p_end) IS DISTINCT FROM (p_old_start, p_old_end)
            OR p_customer IS DISTINCT FROM p_old_customer OR p_old_status = 'cancelled') THEN
        INSERT INTO public.appointments AS a (task_id, customer_id) VALUES (p_task, p_customer)
        ON CONFLICT (task_id) DO UPDATE
            SET sequence = a.sequence + 1, customer_id = EXCLUDED.customer_id, answer = 'none', asked_start = NULL,
                asked_end = NULL, answered_at = NULL, updated_at = now()
        RETURNING a.sequence INTO v_sequence;
        PERFORM public.teamwork_queue_customer_message(
            p_task, p_customer,
            CASE WHEN v_sequence = 0 OR p_old_start IS NULL OR v_was IS DISTINCT FROM p_customer THEN 'booked' ELSE 'changed' END,
            v_sequence, NULL);
        IF v_was IS NOT NULL AND v_was <> p_customer THEN
            PERFORM public.teamwork_queue_customer_message(p_task, v_was, 'cancelled', v_sequence, NULL);
        END IF;
    ELSIF v_was IS NOT NULL AND p_old_exists
          AND ((p_status = 'cancelled' AND p_old_status <> 'cancelled')
               OR (p_customer IS NULL AND p_old_customer IS NOT NULL AND p_status NOT IN ('completed', 'cancelled'))
               OR (p_start IS NULL AND p_old_start IS NOT NULL AND p_status NOT IN ('completed', 'cancelled'))) THEN
        UPDATE public.appointments AS a SET sequence = a.sequence + 1, answer = 'none', asked_start = NULL, asked_end = NULL,
               answered_at = NULL, updated_at = now()
         WHERE a.task_id = p_task RETURNING a.sequence INTO v_sequence;
        PERFORM public.teamwork_queue_customer_message(p_task, v_was, 'cancelled', v_sequence, NULL);
    END IF;
    IF p_old_exists AND p_status = 'completed' AND p_old_status <> 'completed' THEN
        IF p_customer IS NOT NULL THEN
            PERFORM public.teamwork_queue_customer_message(p_task, p_customer, 'done', 0, NULL);
        END IF;
        IF p_assignee IS NOT NULL THEN
            SELECT t.id, COALESCE(t.customer_id, l.customer_id) INTO v_next, v_next_customer
              FROM public.tasks t LEFT JOIN public.locations l ON l.id = t.location_id
             WHERE t.assignee_id = p_assignee AND t.status = 'assigned' AND t.id <> p_task
               AND COALESCE(t.planned_start, t.window_start) BETWEEN now() - interval '4 hours' AND now() + interval '4 hours'
               AND (COALESCE(t.planned_start, t.window_start) AT TIME ZONE t.time_zone)::date = (now() AT TIME ZONE t.time_zone)::date
             ORDER BY COALESCE(t.planned_start, t.window_start), t.id LIMIT 1;
            IF v_next_customer IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM public.appointments a WHERE a.task_id = v_next AND a.answer = 'cancel') THEN
                SELECT a.sequence INTO v_sequence FROM public.appointments a WHERE a.task_id = v_next;
                PERFORM public.teamwork_queue_customer_message(v_next, v_next_customer, 'on_my_way', COALESCE(v_sequence, 0), p_task);
            END IF;
        END IF;
    END IF;
END
$$;
