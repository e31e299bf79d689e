-- Holds customers' messages about tasks on p_day (each on its own clock) of team
-- p_team, or of every team when NULL (migration 0032), as the signed-in manager:
-- what is queued from now on waits, and so does what is due to go and not being
-- sent now (a message the sender holds is leased into the future: it finishes as
-- it is, and its record is kept).
-- Returns the hold's id (the same hold again: the one there is).
CREATE OR REPLACE FUNCTION teamwork_hold_messages(p_day date, p_team bigint, p_note text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_id bigint;
BEGIN
    IF p_day IS NULL THEN
        RAISE EXCEPTION 'a hold names a day' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT h.id INTO v_id FROM public.message_holds h WHERE h.day = p_day AND h.team_id IS NOT DISTINCT FROM p_team;
    IF v_id IS NULL THEN
        INSERT INTO public.message_holds (day, team_id, note, created_by)
        VALUES (p_day, p_team, left(coalesce(p_note, ''), 500), public.teamwork_actor_id())
        ON CONFLICT DO NOTHING RETURNING id INTO v_id;
        IF v_id IS NULL THEN
            SELECT h.id INTO v_id FROM public.message_holds h WHERE h.day = p_day AND h.team_id IS NOT DISTINCT FROM p_team;
        END IF;
    END IF;
    UPDATE public.customer_messages m
       SET state = 'held', reason = 'held for ' || p_day || ': the dispatcher releases the day'
      FROM public.tasks t
     WHERE m.task_id = t.id AND m.state = 'pending' AND m.next_attempt_at <= now()
       AND public.teamwork_message_day(t.id) = p_day AND (p_team IS NULL OR t.team_id = p_team);
    RETURN v_id;
END
$$;
REVOKE ALL ON FUNCTION teamwork_hold_messages(date, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_hold_messages(date, bigint, text) TO teamwork_manager;
