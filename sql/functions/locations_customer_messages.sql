-- A site that names another customer, or none: each of its open tasks without a
-- customer of its own is now for the new one (teamwork_customer_task_changed:
-- booked for them, cancelled for whom it was for), in the same transaction.
CREATE OR REPLACE FUNCTION locations_customer_messages() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    PERFORM public.teamwork_customer_task_changed(
                t.id, t.status, t.window_start, t.window_end, t.assignee_id, NEW.customer_id,
                true, t.status, t.window_start, t.window_end, OLD.customer_id)
       FROM (SELECT * FROM public.tasks WHERE location_id = NEW.id AND customer_id IS NULL
               AND status IN ('open', 'assigned', 'in_progress') ORDER BY id) t;
    RETURN NULL;
END
$$;
