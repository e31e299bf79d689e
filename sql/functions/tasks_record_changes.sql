-- History and feed rows for tasks, once per statement (transition tables), in
-- the same transaction as the change. Who made it: teamwork.actor_id and
-- teamwork.field_change for the whole statement, or, for a statement that
-- applies several workers' changes at once, teamwork.field_changes:
-- {"<task id>": {"change": ..., "actor": ...}}. A manager's override of a
-- rule (the transaction's mark 'forced', e.g. assigning without a required
-- skill) is written into the entry as the pseudo-field "forced"; the day
-- planner's changes (mark 'planned') as "planned". Marks are made only by
-- teamwork_mark: a session setting cannot fake them. SECURITY DEFINER: the tools'
-- roles cannot write history or feed rows themselves.
CREATE OR REPLACE FUNCTION tasks_record_changes() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    actor        bigint := public.teamwork_actor_id();
    field_change text := nullif(current_setting('teamwork.field_change', true), '');
    by_task      jsonb := nullif(current_setting('teamwork.field_changes', true), '')::jsonb;
    forced       jsonb := CASE WHEN public.teamwork_marked('forced') IS NULL THEN '{}'::jsonb
                        ELSE jsonb_build_object('forced', jsonb_build_object(
                                 'old', NULL, 'new', public.teamwork_marked('forced'))) END
                    -- The day planner's changes say so ("day plan 2026-12-01").
                    || CASE WHEN public.teamwork_marked('planned') IS NULL THEN '{}'::jsonb
                        ELSE jsonb_build_object('planned', jsonb_build_object(
                                 'old', NULL, 'new', public.teamwork_marked('planned'))) END;
    written      bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NOT EXISTS (SELECT 1 FROM new_rows) THEN
            RETURN NULL;
        END IF;
        INSERT INTO public.task_history (task_id, action, actor_id, changes, field_change_id)
        SELECT n.id, 'created', actor,
               (SELECT coalesce(jsonb_object_agg(key, jsonb_build_object('old', NULL, 'new', value)), '{}'::jsonb)
                  FROM jsonb_each(to_jsonb(n) - 'id' - 'version' - 'updated_at' - 'created_at')
                 WHERE value <> 'null'::jsonb) || forced,
               field_change
          FROM new_rows n ORDER BY n.id;
        PERFORM pg_advisory_xact_lock(7310150001);
        INSERT INTO public.change_feed (position, entity, entity_id, operation, team_id, old_team_id, assignee_id, old_assignee_id)
        SELECT nextval('public.change_feed_position_seq'), 'task', s.id, 'insert', s.team_id, NULL, s.assignee_id, NULL
          FROM (SELECT n.id, n.team_id, n.assignee_id FROM new_rows n ORDER BY n.id) s;
    ELSIF TG_OP = 'UPDATE' THEN
        IF NOT EXISTS (SELECT 1 FROM new_rows) THEN
            RETURN NULL;
        END IF;
        PERFORM pg_advisory_xact_lock(7310150001);
        WITH changed AS MATERIALIZED (
            SELECT n.id, n.team_id, o.team_id AS old_team_id, n.assignee_id, o.assignee_id AS old_assignee_id,
                   -- A checklist's answers by the items that changed, not the whole object each time.
                   nullif(coalesce((SELECT jsonb_object_agg(nv.key, jsonb_build_object('old', ov.value, 'new', nv.value))
                                      FROM jsonb_each(to_jsonb(n) - 'version' - 'updated_at' - 'answers') nv
                                      JOIN jsonb_each(to_jsonb(o) - 'version' - 'updated_at' - 'answers') ov ON ov.key = nv.key
                                     WHERE ov.value IS DISTINCT FROM nv.value), '{}'::jsonb)
                          || CASE WHEN n.answers IS DISTINCT FROM o.answers THEN jsonb_build_object('answers', (
                                 SELECT jsonb_build_object(
                                            'old', coalesce(jsonb_object_agg(ch.k, o.answers -> ch.k) FILTER (WHERE o.answers ? ch.k), '{}'),
                                            'new', coalesce(jsonb_object_agg(ch.k, n.answers -> ch.k) FILTER (WHERE n.answers ? ch.k), '{}'))
                                   FROM jsonb_object_keys(o.answers || n.answers) AS ch (k)
                                  WHERE (o.answers -> ch.k) IS DISTINCT FROM (n.answers -> ch.k)))
                                  ELSE '{}'::jsonb END, '{}'::jsonb) AS diff
              FROM new_rows n JOIN old_rows o ON o.id = n.id
        ), history AS (
            INSERT INTO public.task_history (task_id, action, actor_id, changes, field_change_id)
            SELECT c.id, 'updated', coalesce((by_task -> c.id::text ->> 'actor')::bigint, actor), c.diff || forced,
                   coalesce(by_task -> c.id::text ->> 'change', field_change)
              FROM changed c WHERE c.diff IS NOT NULL ORDER BY c.id
        )
        INSERT INTO public.change_feed (position, entity, entity_id, operation, team_id, old_team_id, assignee_id, old_assignee_id)
        SELECT nextval('public.change_feed_position_seq'), 'task', s.id, 'update', s.team_id, s.old_team_id, s.assignee_id,
               s.old_assignee_id
          FROM (SELECT c.* FROM changed c WHERE c.diff IS NOT NULL ORDER BY c.id) s;
        GET DIAGNOSTICS written = ROW_COUNT;
        IF written = 0 THEN
            RETURN NULL;
        END IF;
    ELSE
        IF NOT EXISTS (SELECT 1 FROM old_rows) THEN
            RETURN NULL;
        END IF;
        INSERT INTO public.task_history (task_id, action, actor_id, changes, field_change_id)
        SELECT o.id, 'deleted', actor,
               (SELECT coalesce(jsonb_object_agg(key, jsonb_build_object('old', value, 'new', NULL)), '{}'::jsonb)
                  FROM jsonb_each(to_jsonb(o) - 'id' - 'version' - 'updated_at' - 'created_at')
                 WHERE value <> 'null'::jsonb),
               field_change
          FROM old_rows o ORDER BY o.id;
        PERFORM pg_advisory_xact_lock(7310150001);
        INSERT INTO public.change_feed (position, entity, entity_id, operation, team_id, old_team_id, assignee_id, old_assignee_id)
        SELECT nextval('public.change_feed_position_seq'), 'task', s.id, 'delete', NULL, s.team_id, NULL, s.assignee_id
          FROM (SELECT o.id, o.team_id, o.assignee_id FROM old_rows o ORDER BY o.id) s;
    END IF;
    -- A constant payload: PostgreSQL folds the notifications of one transaction into one.
    PERFORM pg_notify('teamwork_feed', '');
    RETURN NULL;
END
$$;
