-- The customers' side of every change to tasks, once per statement, in the same
-- transaction (teamwork_customer_task_changed says what each change means). One
-- probe while there are no customers at all, so the listener's bulk paths pay
-- nothing more.
CREATE OR REPLACE FUNCTION tasks_customer_messages() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM public.customers) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        PERFORM public.teamwork_customer_task_changed(
                    n.id, n.status, n.window_start, n.window_end, n.assignee_id, COALESCE(n.customer_id, l.customer_id),
                    false, NULL, NULL, NULL, NULL)
           FROM (SELECT * FROM new_rows ORDER BY id) n LEFT JOIN public.locations l ON l.id = n.location_id
          WHERE COALESCE(n.customer_id, l.customer_id) IS NOT NULL;
    ELSE
        PERFORM public.teamwork_customer_task_changed(
                    n.id, n.status, n.window_start, n.window_end, n.assignee_id, COALESCE(n.customer_id, nl.customer_id),
                    true, o.status, o.window_start, o.window_end, COALESCE(o.customer_id, ol.customer_id))
           FROM (SELECT * FROM new_rows ORDER BY id) n JOIN old_rows o ON o.id = n.id
           LEFT JOIN public.locations nl ON nl.id = n.location_id LEFT JOIN public.locations ol ON ol.id = o.location_id
          WHERE (n.status, n.window_start, n.window_end, n.customer_id, n.location_id)
                IS DISTINCT FROM (o.status, o.window_start, o.window_end, o.customer_id, o.location_id)
            AND (COALESCE(n.customer_id, nl.customer_id) IS NOT NULL OR COALESCE(o.customer_id, ol.customer_id) IS NOT NULL
                 OR (n.status = 'completed' AND o.status <> 'completed' AND n.assignee_id IS NOT NULL));
    END IF;
    RETURN NULL;
END
$$;
