-- The customer's answer through the link with p_secret: 'confirmed', 'move' (to
-- the window p_start–p_end, one the page offered) or 'cancel'. Answers once per
-- appointment sequence: every link of that sequence is used up. Returns 'done',
-- or why not: 'unknown', 'superseded' (the window changed since; a newer message
-- went), 'used', 'expired' or 'closed' (the work has begun, ended or been
-- cancelled). Tells webhooks (appointment.confirmed / moved / cancelled) and the
-- boards (NOTIFY teamwork_appointments) in the same transaction.
CREATE OR REPLACE FUNCTION teamwork_appointment_answer(p_secret text, p_answer text, p_start timestamptz, p_end timestamptz)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    k public.appointment_links;
    a public.appointments;
    v_status text;
BEGIN
    IF p_answer IS NULL OR p_answer NOT IN ('confirmed', 'move', 'cancel') THEN
        RAISE EXCEPTION 'an answer is confirmed, move or cancel' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_answer = 'move' AND (p_start IS NULL OR p_end IS NULL OR p_start <= now() OR p_end <= p_start
                              OR p_end - p_start > interval '1 day') THEN
        RAISE EXCEPTION 'a move needs a window from now on, at most a day long' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The appointment is locked first, then its link: two answers at once (the email's link and the
    -- text's) take their locks in the same order, and the second finds the first's answer.
    SELECT * INTO k FROM public.appointment_links WHERE secret_hash = sha256(convert_to(p_secret, 'UTF8'));
    IF NOT FOUND THEN
        RETURN 'unknown';
    END IF;
    SELECT * INTO a FROM public.appointments WHERE booking = k.booking FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'superseded';
    END IF;
    SELECT * INTO k FROM public.appointment_links WHERE secret_hash = k.secret_hash FOR UPDATE;
    SELECT t.status INTO v_status FROM public.tasks t WHERE t.id = k.task_id;
    IF a.sequence <> k.sequence THEN
        RETURN 'superseded';
    ELSIF k.used_at IS NOT NULL OR a.answer <> 'none' THEN
        RETURN 'used';
    ELSIF k.expires_at <= now() THEN
        RETURN 'expired';
    ELSIF v_status NOT IN ('open', 'assigned') THEN
        RETURN 'closed';
    END IF;
    UPDATE public.appointment_links SET used_at = now()
     WHERE booking = k.booking AND sequence = k.sequence AND used_at IS NULL;
    UPDATE public.appointments
       SET answer = p_answer, asked_start = CASE WHEN p_answer = 'move' THEN p_start END,
           asked_end = CASE WHEN p_answer = 'move' THEN p_end END, answered_at = now(), updated_at = now()
     WHERE booking = k.booking;
    PERFORM public.teamwork_outbox_add(
        'appointment.' || CASE p_answer WHEN 'confirmed' THEN 'confirmed' WHEN 'move' THEN 'moved' ELSE 'cancelled' END,
        k.task_id,
        jsonb_build_object('task_id', k.task_id, 'sequence', k.sequence, 'answer', p_answer,
                           'asked_start', CASE WHEN p_answer = 'move' THEN p_start END,
                           'asked_end', CASE WHEN p_answer = 'move' THEN p_end END));
    PERFORM pg_notify('teamwork_feed', '');
    RETURN 'done';
END
$$;
