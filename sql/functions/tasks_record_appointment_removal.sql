-- Before a task goes, its appointment is kept on record (appointment_removals,
-- sql/0045): the booking, the sequence and answer it had, how many links the
-- customer held, and who removed it. Definer: no role writes the record itself.
CREATE OR REPLACE FUNCTION tasks_record_appointment_removal() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    INSERT INTO public.appointment_removals (task_id, customer_id, booking, sequence, answer, answered_at, links, removed_by)
    SELECT a.task_id, a.customer_id, a.booking, a.sequence, a.answer, a.answered_at,
           (SELECT count(*) FROM public.appointment_links k WHERE k.task_id = a.task_id), public.teamwork_actor_id()
      FROM public.appointments a WHERE a.task_id = OLD.id;
    RETURN OLD;
END
$$;
