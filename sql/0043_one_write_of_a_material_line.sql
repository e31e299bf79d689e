-- What was used (sql/0037): the field change 'use' and a manager's correction
-- (teamwork_correct_material) set a line through one function. The body lives in
-- sql/functions/teamwork_set_material_line.sql; only the definer functions that
-- check first call it.
CREATE FUNCTION teamwork_set_material_line(bigint, bigint, bigint, text, numeric, timestamptz, text, boolean) RETURNS boolean
    LANGUAGE sql AS $$ SELECT false $$;
REVOKE ALL ON FUNCTION teamwork_set_material_line(bigint, bigint, bigint, text, numeric, timestamptz, text, boolean) FROM PUBLIC;
