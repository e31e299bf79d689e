-- Tells whoever listens on teamwork_plans (teamwork-service run's plan
-- generation) that a plan changed, once per statement, at commit.
CREATE OR REPLACE FUNCTION teamwork_plans_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    PERFORM pg_notify('teamwork_plans', '');
    RETURN NULL;
END
$$;
