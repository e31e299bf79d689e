-- Erases customer p_customer on their request: name, email and phone gone,
-- consent withdrawn; their messages, appointments and links deleted (links go
-- with their bookings). What was removed is recorded in customer_erasures, with
-- who did it; returns that record's id. Sites and tasks keep pointing at the
-- erased row, so the work's history stands.
CREATE OR REPLACE FUNCTION teamwork_erase_customer(p_customer bigint) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_messages     integer;
    v_appointments integer;
    v_links        integer;
    v_id           bigint;
BEGIN
    PERFORM 1 FROM public.customers WHERE id = p_customer FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no customer with id %', p_customer USING ERRCODE = 'no_data_found';
    END IF;
    DELETE FROM public.customer_messages WHERE customer_id = p_customer;
    GET DIAGNOSTICS v_messages = ROW_COUNT;
    SELECT count(*) INTO v_links
      FROM public.appointment_links k JOIN public.appointments a ON a.booking = k.booking
     WHERE a.customer_id = p_customer;
    DELETE FROM public.appointments WHERE customer_id = p_customer;
    GET DIAGNOSTICS v_appointments = ROW_COUNT;
    -- The records of visits removed with their tasks (sql/0045) go too.
    DELETE FROM public.appointment_removals WHERE customer_id = p_customer;
    UPDATE public.customers
       SET name = 'erased customer ' || id, email = NULL, phone = NULL, consent = false,
           erased_at = coalesce(erased_at, now()), updated_at = now()
     WHERE id = p_customer;
    INSERT INTO public.customer_erasures (customer_id, erased_by, messages, appointments, links)
    VALUES (p_customer, public.teamwork_actor_id(), v_messages, v_appointments, v_links)
    RETURNING id INTO v_id;
    RETURN v_id;
END
$$;
