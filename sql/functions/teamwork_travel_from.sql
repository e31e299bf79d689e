-- When person p_person's travel that began at p_start and arrived at p_arrival counts
-- from: the later of p_start and the end of their last work before arriving (a job
-- done on the way is not travel); p_start when it has not arrived.
CREATE OR REPLACE FUNCTION teamwork_travel_from(p_person bigint, p_start timestamptz, p_arrival timestamptz)
RETURNS timestamptz
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT CASE WHEN p_arrival IS NULL THEN p_start ELSE greatest(p_start, (
        SELECT max(w.ended_at) FROM public.time_entries w
         WHERE w.person_id = p_person AND w.kind = 'work' AND w.ended_at <= p_arrival
           AND w.started_at >= p_arrival - interval '2 days')) END
$$;
