-- A task's customer facts changed without the task changing (sql/0035): its
-- appointment (answered, made anew, deleted, moved to another task), its customer
-- (renamed, erased), or its site's customer. Each task concerned goes into the
-- change feed as an update, whatever its status (a completed task's copy must lose
-- an erased customer's name too), so its replica copy is written again with the
-- facts as they are now.
CREATE OR REPLACE FUNCTION teamwork_visit_changed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_tasks bigint[];
    r record;
BEGIN
    IF TG_TABLE_NAME = 'appointments' THEN
        IF TG_OP = 'DELETE' THEN
            v_tasks := ARRAY[OLD.task_id];
        ELSIF TG_OP = 'UPDATE' THEN
            v_tasks := ARRAY[OLD.task_id, NEW.task_id];
        ELSE
            v_tasks := ARRAY[NEW.task_id];
        END IF;
    ELSIF TG_TABLE_NAME = 'customers' THEN
        SELECT array_agg(x.id) INTO v_tasks FROM (
            SELECT t.id FROM public.tasks t WHERE t.customer_id = NEW.id
            UNION
            SELECT t.id FROM public.locations l JOIN public.tasks t ON t.location_id = l.id AND t.customer_id IS NULL
             WHERE l.customer_id = NEW.id) x;
    ELSE
        SELECT array_agg(t.id) INTO v_tasks FROM public.tasks t WHERE t.location_id = NEW.id AND t.customer_id IS NULL;
    END IF;
    FOR r IN SELECT t.id, t.team_id, t.assignee_id FROM public.tasks t WHERE t.id = ANY (coalesce(v_tasks, '{}')) ORDER BY t.id LOOP
        PERFORM public.teamwork_feed_append('task', r.id, 'update', r.team_id, r.team_id, r.assignee_id, r.assignee_id);
    END LOOP;
    RETURN NULL;
END
$$;
