-- Push messages for a person's changes the master did not take: 'refused' as the
-- listener records one (a rule refused it, or it was set aside), 'decided' when a
-- dispatcher decides on one set aside (the decision reaches the field as
-- teamwork_field_change_decided sends it). A check-in is nothing to tell.
CREATE OR REPLACE FUNCTION field_changes_push() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_people bigint[];
    v_tasks bigint[];
BEGIN
    IF NOT EXISTS (SELECT 1 FROM public.push_subscriptions) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(n.person_id), array_agg(n.task_id) INTO v_people, v_tasks
          FROM new_rows n WHERE NOT n.applied AND n.conflict IS NOT NULL AND n.operation <> 'checkin';
        PERFORM public.teamwork_queue_push('refused', v_people, v_tasks);
    ELSE
        SELECT array_agg(n.person_id), array_agg(n.task_id) INTO v_people, v_tasks
          FROM new_rows n JOIN old_rows o ON o.id = n.id
         WHERE o.resolved_at IS NULL AND n.resolved_at IS NOT NULL AND NOT n.applied AND n.operation <> 'checkin';
        PERFORM public.teamwork_queue_push('decided', v_people, v_tasks);
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION field_changes_push() FROM PUBLIC;
