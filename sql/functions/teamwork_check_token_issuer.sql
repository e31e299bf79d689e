-- Raises unless this session may give `p_person` a way in (a token, or a phone's
-- pairing): the one rule for both. The person must exist and be active. Besides
-- the owner, a manager's bound role (actor_roles) may do it for workers and for
-- themselves, an admin's for anyone, an unbound login (which could name anyone as
-- its actor) for workers only: a token for a manager or an admin would let its
-- issuer act as that person on the board. Locks the person (FOR SHARE), so a
-- deactivation in flight comes wholly before or after.
CREATE OR REPLACE FUNCTION teamwork_check_token_issuer(p_person bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_actor bigint := public.teamwork_actor_id();
    v_target public.people%ROWTYPE;
    v_actor_role text;
    v_bound boolean := false;
BEGIN
    SELECT * INTO v_target FROM public.people WHERE id = p_person FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no person with id %', p_person USING ERRCODE = 'TWS02';
    END IF;
    IF v_target.deactivated_at IS NOT NULL THEN
        RAISE EXCEPTION 'person % is deactivated: reactivate them before issuing a token', p_person USING ERRCODE = 'TWS01';
    END IF;
    IF public.teamwork_trusted_session() THEN
        RETURN;
    END IF;
    v_bound := EXISTS (SELECT 1 FROM public.actor_roles a WHERE a.role_name = session_user);
    IF v_bound THEN
        SELECT p.role INTO v_actor_role FROM public.people p WHERE p.id = v_actor AND p.deactivated_at IS NULL;
        IF v_actor_role IS NULL OR v_actor_role NOT IN ('manager', 'admin') THEN
            RAISE EXCEPTION 'only an active manager or admin issues tokens' USING ERRCODE = 'TWS01';
        END IF;
    END IF;
    IF v_target.role IN ('manager', 'admin')
       AND NOT (v_bound AND (v_target.id = v_actor OR v_actor_role = 'admin')) THEN
        RAISE EXCEPTION 'only an admin issues a token for another manager or an admin (a bound admin''s database role, or the owner)'
            USING ERRCODE = 'TWS01';
    END IF;
END
$$;
