-- Marks this transaction's changes to tasks for their history: p_name 'forced'
-- (a manager overrides a rule; p_value says why, at most 500 bytes) or 'planned'
-- (the day planner; p_value is 'day plan YYYY-MM-DD') or 'hold_messages' (an import
-- holds its customers' messages; p_value is the hold's note). An empty or NULL p_value
-- takes the mark away. Marks of finished transactions are cleared as new ones come.
CREATE OR REPLACE FUNCTION teamwork_mark(p_name text, p_value text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF p_name IS NULL OR p_name NOT IN ('forced', 'planned', 'hold_messages') THEN
        RAISE EXCEPTION 'a mark is forced, planned or hold_messages' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_name = 'planned' AND coalesce(p_value, '') <> '' AND p_value !~ '^day plan [0-9]{4}-[0-9]{2}-[0-9]{2}$' THEN
        RAISE EXCEPTION 'a planned mark says day plan YYYY-MM-DD' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Rows another transaction is clearing are left to it: no one waits on another's clean-up.
    DELETE FROM public.transaction_marks WHERE ctid IN (
        SELECT ctid FROM public.transaction_marks WHERE txid < txid_snapshot_xmin(txid_current_snapshot())
           FOR UPDATE SKIP LOCKED);
    IF coalesce(p_value, '') = '' THEN
        DELETE FROM public.transaction_marks WHERE txid = txid_current() AND name = p_name;
        RETURN;
    END IF;
    INSERT INTO public.transaction_marks (txid, name, value) VALUES (txid_current(), p_name, p_value)
    ON CONFLICT (txid, name) DO UPDATE SET value = EXCLUDED.value;
END
$$;
