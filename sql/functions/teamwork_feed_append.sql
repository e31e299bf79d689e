-- Positions are handed out under a transaction-scoped advisory lock, so they are
-- assigned in commit order: a reader that has seen position N will never later
-- find a newly committed position below N. Only the SECURITY DEFINER triggers
-- call it; nobody else may.
CREATE OR REPLACE FUNCTION teamwork_feed_append(
    p_entity text, p_entity_id bigint, p_operation text,
    p_team bigint, p_old_team bigint, p_assignee bigint, p_old_assignee bigint
) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(7310150001);
    INSERT INTO public.change_feed (position, entity, entity_id, operation, team_id, old_team_id, assignee_id, old_assignee_id)
    VALUES (nextval('public.change_feed_position_seq'), p_entity, p_entity_id, p_operation,
            p_team, p_old_team, p_assignee, p_old_assignee);
    -- A constant payload: PostgreSQL folds the notifications of one transaction into one.
    PERFORM pg_notify('teamwork_feed', '');
END
$$;
REVOKE ALL ON FUNCTION teamwork_feed_append(text, bigint, text, bigint, bigint, bigint, bigint) FROM PUBLIC;
