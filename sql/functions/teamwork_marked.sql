-- This transaction's mark p_name (teamwork_mark), or NULL.
CREATE OR REPLACE FUNCTION teamwork_marked(p_name text) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT m.value FROM public.transaction_marks m WHERE m.txid = txid_current_if_assigned() AND m.name = p_name
$$;
