-- The master's own check that a worker change touches only tasks of the
-- replica it came from: a change naming a task that is not in that replica now
-- and never was (by the change feed, which records every team and assignee a
-- task had), or a check-in naming any task, reaches the rules without its task,
-- so it writes no history on another team's task and can never change one.
-- Then the rules (teamwork_apply_field_changes_in_replica).
CREATE OR REPLACE FUNCTION teamwork_apply_field_changes(
    p_replica text, p_source text, p_changes jsonb, p_position bigint, p_change_id text)
RETURNS TABLE (change_id text, task_id bigint, applied boolean, conflict text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_team   bigint;
    v_person bigint;
    v_kept   jsonb;
BEGIN
    IF p_replica ~ '^team-[0-9]+$' THEN
        v_team := substr(p_replica, 6)::bigint;
    ELSIF p_replica ~ '^person-[0-9]+$' THEN
        v_person := substr(p_replica, 8)::bigint;
    END IF;
    SELECT coalesce(jsonb_agg(
               CASE WHEN e.c->>'task_id' IS NULL THEN e.c
                    WHEN e.c->>'operation' = 'checkin' OR NOT (
                        EXISTS (SELECT 1 FROM public.tasks t
                                 WHERE t.id = (e.c->>'task_id')::bigint
                                   AND (t.team_id = v_team OR (t.team_id IS NULL AND t.assignee_id = v_person)))
                        OR EXISTS (SELECT 1 FROM public.change_feed f
                                    WHERE f.entity = 'task' AND f.entity_id = (e.c->>'task_id')::bigint
                                      AND (f.team_id = v_team OR f.old_team_id = v_team
                                           OR f.assignee_id = v_person OR f.old_assignee_id = v_person)))
                    THEN jsonb_set(e.c, '{task_id}', 'null'::jsonb)
                    ELSE e.c END
               ORDER BY e.ord), '[]'::jsonb)
      INTO v_kept
      FROM jsonb_array_elements(p_changes) WITH ORDINALITY AS e (c, ord);
    RETURN QUERY SELECT * FROM public.teamwork_apply_field_changes_in_replica(p_replica, p_source, v_kept, p_position, p_change_id);
END
$$;
REVOKE ALL ON FUNCTION teamwork_apply_field_changes(text, text, jsonb, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_apply_field_changes(text, text, jsonb, bigint, text) TO teamwork_service;
