-- Whether person p_person holds or held task p_task, so may record time on it
-- (WorkerChange's rule for 'time' on devices knows only the task as it is now):
-- its assignee now or at some point (the change feed keeps every assignee a task
-- had), its completer, or someone whose own claim, start or completion of it the
-- master took, or whose start and completion keep time on it.
CREATE OR REPLACE FUNCTION teamwork_time_held(p_task bigint, p_person bigint) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT EXISTS (SELECT 1 FROM public.tasks t WHERE t.id = p_task AND (t.assignee_id = p_person OR t.completed_by = p_person))
        OR EXISTS (SELECT 1 FROM public.change_feed f WHERE f.entity = 'task' AND f.entity_id = p_task
                      AND (f.assignee_id = p_person OR f.old_assignee_id = p_person))
        OR EXISTS (SELECT 1 FROM public.field_changes c WHERE c.task_id = p_task AND c.person_id = p_person AND c.applied
                      AND c.operation IN ('claim', 'start', 'complete'))
        OR EXISTS (SELECT 1 FROM public.time_entries e WHERE e.task_id = p_task AND e.person_id = p_person AND e.source = 'auto')
$$;
