-- Only an admin (a bound admin's role, or the owner) makes someone a manager
-- or an admin, or takes it away: managers may write `people`, and a manager
-- who could promote themselves, or demote an admin to a worker, issue them a
-- token and promote them back, could act as anyone on the board.
CREATE OR REPLACE FUNCTION people_check_role_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_admin boolean;
BEGIN
    IF (TG_OP = 'INSERT' AND NEW.role NOT IN ('manager', 'admin'))
       OR (TG_OP = 'UPDATE' AND (NEW.role IS NOT DISTINCT FROM OLD.role
                                 OR (OLD.role NOT IN ('manager', 'admin') AND NEW.role NOT IN ('manager', 'admin'))))
       OR public.teamwork_trusted_session() THEN
        RETURN NEW;
    END IF;
    IF EXISTS (SELECT 1 FROM public.actor_roles a WHERE a.role_name = session_user) THEN
        SELECT p.role = 'admin' AND p.deactivated_at IS NULL INTO v_admin FROM public.people p WHERE p.id = public.teamwork_actor_id();
    END IF;
    IF NOT coalesce(v_admin, false) THEN
        RAISE EXCEPTION 'only an admin makes someone a manager or an admin, or takes it away (a bound admin''s database role, or the owner)'
            USING ERRCODE = 'TWS01';
    END IF;
    RETURN NEW;
END
$$;
