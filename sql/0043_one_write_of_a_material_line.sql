-- What was used (sql/0037): the field change 'use' and a manager's correction
-- (teamwork_correct_material) set a line through one function. The body lives in
-- sql/functions/teamwork_set_material_line.sql; only the definer functions that
-- check first call it.
CREATE FUNCTION teamwork_set_material_line(bigint, bigint, bigint, text, numeric, timestamptz, text, boolean) RETURNS boolean
    LANGUAGE sql AS $$ SELECT false $$;
REVOKE ALL ON FUNCTION teamwork_set_material_line(bigint, bigint, bigint, text, numeric, timestamptz, text, boolean) FROM PUBLIC;

-- Definer trigger functions write what no role may write itself (history, the feed, the
-- outbox, customer messages, time on the job). A trigger fires its function without
-- asking for EXECUTE, but a role with EXECUTE could attach one to a temporary table of
-- its own and feed it made-up rows: none may (RolesTests). Every trigger function loses it
-- (a body in sql/functions may become a definer after its migration's stub).
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
              WHERE p.pronamespace = 'public'::regnamespace AND p.prorettype = 'trigger'::regtype
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
    END LOOP;
END
$$;

-- The tasks a report of a period reads (report materials, report labour): the body
-- lives in sql/functions/teamwork_completed_tasks.sql.
CREATE FUNCTION teamwork_completed_tasks(date, date, bigint)
RETURNS TABLE (task_id bigint, title text, team text, customer text, completed_on date, completed_at timestamptz)
LANGUAGE sql AS $$ SELECT NULL::bigint, NULL::text, NULL::text, NULL::text, NULL::date, NULL::timestamptz WHERE false $$;
