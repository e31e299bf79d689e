-- A new link secret for task p_task's appointment at p_sequence (NULL when that
-- is no longer its appointment, or its window has begun), bound to the booking
-- it is for (a booking made anew is another: this link never answers for it): a
-- secret signed with the service's link key (teamwork_link_secret), made, hashed
-- and kept here so no role can write a link of its own. It expires when the window starts, or
-- in 30 days.
CREATE OR REPLACE FUNCTION teamwork_issue_appointment_link(p_task bigint, p_sequence integer) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_expires timestamptz;
    v_booking bigint;
    v_secret  text;
BEGIN
    SELECT least(t.window_start, now() + interval '30 days'), a.booking INTO v_expires, v_booking
      FROM public.tasks t JOIN public.appointments a ON a.task_id = t.id AND a.sequence = p_sequence
     WHERE t.id = p_task AND t.status NOT IN ('completed', 'cancelled');
    IF v_expires IS NULL OR v_expires <= now() THEN
        RETURN NULL;
    END IF;
    v_secret := public.teamwork_link_secret('twa_');
    INSERT INTO public.appointment_links (secret_hash, task_id, booking, sequence, expires_at, signed)
    VALUES (sha256(convert_to(v_secret, 'UTF8')), p_task, v_booking, p_sequence, v_expires, true);
    RETURN v_secret;
END
$$;
