-- Who the history says acted. The tools name the acting person per transaction
-- (set_config('teamwork.actor_id', ...)); a manager's database role bound to
-- their person in actor_roles acts as that person and no one else: naming
-- another is refused, naming no one records them. Roles not bound keep what
-- the tools name (docs/security.md).
CREATE OR REPLACE FUNCTION teamwork_actor_id() RETURNS bigint
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_named bigint := nullif(current_setting('teamwork.actor_id', true), '')::bigint;
    v_bound bigint;
BEGIN
    SELECT a.person_id INTO v_bound FROM public.actor_roles a WHERE a.role_name = session_user;
    IF v_bound IS NULL THEN
        RETURN v_named;
    END IF;
    IF v_named IS NOT NULL AND v_named <> v_bound THEN
        RAISE EXCEPTION 'database role % acts as person % only', session_user, v_bound USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN v_bound;
END
$$;
