-- Releases the hold on p_day of team p_team (NULL: the hold of every team;
-- migration 0032): its messages go now, except those another hold still covers.
-- Returns how many were released (-1: there was no such hold).
CREATE OR REPLACE FUNCTION teamwork_release_messages(p_day date, p_team bigint) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_released integer;
BEGIN
    DELETE FROM public.message_holds h WHERE h.day = p_day AND h.team_id IS NOT DISTINCT FROM p_team;
    IF NOT FOUND THEN
        RETURN -1;
    END IF;
    UPDATE public.customer_messages m
       SET state = 'pending', reason = NULL, next_attempt_at = now()
      FROM public.tasks t
     WHERE m.task_id = t.id AND m.state = 'held'
       AND NOT EXISTS (SELECT 1 FROM public.message_holds h
                        WHERE h.day = public.teamwork_message_day(t.id) AND (h.team_id IS NULL OR h.team_id = t.team_id));
    GET DIAGNOSTICS v_released = ROW_COUNT;
    PERFORM pg_notify('teamwork_outbox', '');
    RETURN v_released;
END
$$;
REVOKE ALL ON FUNCTION teamwork_release_messages(date, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_release_messages(date, bigint) TO teamwork_manager;
