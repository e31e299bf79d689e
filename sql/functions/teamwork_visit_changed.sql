-- A task's customer facts changed without the task changing (sql/0035): its
-- appointment (answered, made anew, deleted), its customer (renamed, erased), or
-- its site's customer. Each open task concerned goes into the change feed as an
-- update, so its replica copy is written again with the facts as they are now.
CREATE OR REPLACE FUNCTION teamwork_visit_changed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_tasks bigint[];
    r record;
BEGIN
    IF TG_TABLE_NAME = 'appointments' THEN
        IF TG_OP = 'DELETE' THEN
            v_tasks := ARRAY[OLD.task_id];
        ELSE
            v_tasks := ARRAY[NEW.task_id];
        END IF;
    ELSIF TG_TABLE_NAME = 'customers' THEN
        SELECT array_agg(t.id) INTO v_tasks FROM public.tasks t
         WHERE t.customer_id = NEW.id
            OR (t.customer_id IS NULL AND t.location_id IN (SELECT l.id FROM public.locations l WHERE l.customer_id = NEW.id));
    ELSE
        SELECT array_agg(t.id) INTO v_tasks FROM public.tasks t WHERE t.location_id = NEW.id AND t.customer_id IS NULL;
    END IF;
    FOR r IN
        SELECT t.id, t.team_id, t.assignee_id FROM public.tasks t
         WHERE t.id = ANY (coalesce(v_tasks, '{}')) AND t.status IN ('open', 'assigned', 'in_progress')
         ORDER BY t.id
    LOOP
        PERFORM public.teamwork_feed_append('task', r.id, 'update', r.team_id, r.team_id, r.assignee_id, r.assignee_id);
    END LOOP;
    RETURN NULL;
END
$$;
