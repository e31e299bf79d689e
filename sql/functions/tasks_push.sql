-- Push messages for task changes (teamwork_queue_push), once per statement:
-- 'assigned' to a task's new assignee (made with one, or given one, or given
-- back: reopened or no longer cancelled), 'taken' to the assignee it was taken
-- from, 'changed' to its assignee when what the worker goes by moves (the window,
-- the due time, the place, the title, the priority) or it is cancelled. Nothing is read while
-- no phone is subscribed at all, so bulk writes pay one probe.
CREATE OR REPLACE FUNCTION tasks_push() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_people bigint[];
    v_tasks bigint[];
BEGIN
    IF NOT EXISTS (SELECT 1 FROM public.push_subscriptions) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(n.assignee_id), array_agg(n.id) INTO v_people, v_tasks
          FROM new_rows n WHERE n.assignee_id IS NOT NULL AND n.status NOT IN ('completed', 'cancelled');
        PERFORM public.teamwork_queue_push('assigned', v_people, v_tasks);
        RETURN NULL;
    END IF;
    SELECT array_agg(n.assignee_id), array_agg(n.id) INTO v_people, v_tasks
      FROM new_rows n JOIN old_rows o ON o.id = n.id
     WHERE n.assignee_id IS NOT NULL AND n.status NOT IN ('completed', 'cancelled')
       AND (n.assignee_id IS DISTINCT FROM o.assignee_id OR o.status IN ('completed', 'cancelled'));
    PERFORM public.teamwork_queue_push('assigned', v_people, v_tasks);
    SELECT array_agg(o.assignee_id), array_agg(o.id) INTO v_people, v_tasks
      FROM new_rows n JOIN old_rows o ON o.id = n.id
     WHERE o.assignee_id IS NOT NULL AND n.assignee_id IS DISTINCT FROM o.assignee_id
       AND o.status NOT IN ('completed', 'cancelled');
    PERFORM public.teamwork_queue_push('taken', v_people, v_tasks);
    SELECT array_agg(n.assignee_id), array_agg(n.id) INTO v_people, v_tasks
      FROM new_rows n JOIN old_rows o ON o.id = n.id
     WHERE n.assignee_id IS NOT NULL AND n.assignee_id = o.assignee_id AND o.status NOT IN ('completed', 'cancelled')
       AND ((n.window_start, n.window_end, n.due_at, n.location_id, n.title, n.priority)
                IS DISTINCT FROM (o.window_start, o.window_end, o.due_at, o.location_id, o.title, o.priority)
            OR n.status = 'cancelled');
    PERFORM public.teamwork_queue_push('changed', v_people, v_tasks);
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION tasks_push() FROM PUBLIC;
