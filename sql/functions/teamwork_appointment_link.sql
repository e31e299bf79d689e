-- What the link with p_secret opens: its task and sequence, the appointment's
-- sequence now and its answer, and when the link expires or was used. No row for
-- an unknown secret, nor for one whose booking is gone.
CREATE OR REPLACE FUNCTION teamwork_appointment_link(p_secret text)
RETURNS TABLE (task_id bigint, sequence integer, current_sequence integer, answer text, expires_at timestamptz,
               used_at timestamptz, asked_start timestamptz, asked_end timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT k.task_id, k.sequence, a.sequence, a.answer, k.expires_at, k.used_at, a.asked_start, a.asked_end
      FROM public.appointment_links k JOIN public.appointments a ON a.booking = k.booking
     WHERE k.secret_hash = sha256(convert_to(p_secret, 'UTF8'))
$$;
