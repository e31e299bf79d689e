-- Closes payroll through p_through (the Sunday of ISO week p_week) as the acting
-- manager (teamwork_actor_id): from then on no time entry is recorded, changed or
-- removed on those days (teamwork_time_closed). Closing is forward only: a week
-- on or before the last one closed is refused (TWS01). Definer: payroll_closes is
-- written only here.
CREATE OR REPLACE FUNCTION teamwork_close_payroll(p_week text, p_through date) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_last public.payroll_closes%ROWTYPE;
BEGIN
    IF p_week IS NULL OR p_week !~ '^[0-9]{4}-W[0-9]{2}$' OR p_through IS NULL OR extract(isodow FROM p_through) <> 7
       OR to_char(p_through, 'IYYY-"W"IW') <> p_week THEN
        RAISE EXCEPTION 'a week is closed through its Sunday, like 2026-W48 through 2026-11-29' USING ERRCODE = 'TWS01';
    END IF;
    LOCK TABLE public.payroll_closes IN SHARE ROW EXCLUSIVE MODE;
    SELECT * INTO v_last FROM public.payroll_closes ORDER BY through DESC, id DESC LIMIT 1;
    IF FOUND AND v_last.through >= p_through THEN
        RAISE EXCEPTION 'payroll is closed through % (week %) already', v_last.through, v_last.week USING ERRCODE = 'TWS01';
    END IF;
    INSERT INTO public.payroll_closes (week, through, closed_by) VALUES (p_week, p_through, public.teamwork_actor_id());
END
$$;
REVOKE ALL ON FUNCTION teamwork_close_payroll(text, date) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_close_payroll(text, date) TO teamwork_manager;
