-- Sign-out: the session a cookie's secret names ends; true when there was one.
CREATE OR REPLACE FUNCTION teamwork_close_board_session(p_secret text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    DELETE FROM public.board_sessions WHERE secret_hash = sha256(convert_to(p_secret, 'UTF8'));
    RETURN FOUND;
END
$$;
