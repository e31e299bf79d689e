-- Who the history says acted. The tools name the acting person per transaction
-- (set_config('teamwork.actor_id', ...)); with a SQL session of their own a
-- manager could name anyone. A manager's database role bound to their person
-- here acts as that person and no one else: naming another is refused, naming
-- no one records them. Roles not bound (the schema owner, the local default,
-- the service, which acts for the worker whose change it applies) keep what
-- the tools name.
CREATE TABLE actor_roles (
    role_name  name PRIMARY KEY,
    person_id  bigint NOT NULL REFERENCES people (id) ON DELETE CASCADE
);
GRANT SELECT ON actor_roles TO teamwork_manager, teamwork_service;

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
