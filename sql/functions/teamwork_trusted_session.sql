-- Whether this session is the schema's owner's (or a superuser's): the one
-- login trusted to decide who is a manager or an admin without an admin's
-- binding. Everyone else is judged by their bound person (actor_roles).
CREATE OR REPLACE FUNCTION teamwork_trusted_session() RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT coalesce((SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = session_user), false)
        OR session_user = (SELECT t.tableowner FROM pg_catalog.pg_tables t WHERE t.schemaname = 'public' AND t.tablename = 'people')
$$;
