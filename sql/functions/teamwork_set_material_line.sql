-- Sets person p_person's line on task p_task for part p_part (its id) or, with no
-- part, for the line described p_description, to p_quantity (0 keeps it as removed:
-- an older change arriving late cannot bring it back), recorded at p_at by p_change.
-- A new line takes the catalogue's unit and price of now; a line set again keeps
-- those it was first recorded with. A worker's change (p_correction false) never
-- replaces a line recorded later (false: superseded); a manager's correction always
-- does. One statement for both writers of a line (checked first by the caller).
CREATE OR REPLACE FUNCTION teamwork_set_material_line(
    p_task bigint, p_person bigint, p_part bigint, p_description text, p_quantity numeric, p_at timestamptz,
    p_change text, p_correction boolean)
RETURNS boolean
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_rows bigint;
BEGIN
    IF p_part IS NOT NULL THEN
        INSERT INTO public.task_materials AS m (task_id, person_id, part_id, quantity, unit, unit_price, currency, recorded_at, change_id)
        SELECT p_task, p_person, p.id, p_quantity, p.unit, p.unit_price, p.currency, p_at, p_change FROM public.parts p WHERE p.id = p_part
        ON CONFLICT (task_id, person_id, part_id) WHERE part_id IS NOT NULL DO UPDATE
           SET quantity = excluded.quantity, recorded_at = greatest(m.recorded_at, excluded.recorded_at), change_id = excluded.change_id
         WHERE p_correction OR m.recorded_at <= excluded.recorded_at;
    ELSE
        INSERT INTO public.task_materials AS m (task_id, person_id, description, quantity, recorded_at, change_id)
        VALUES (p_task, p_person, btrim(p_description), p_quantity, p_at, p_change)
        ON CONFLICT (task_id, person_id, lower(description)) WHERE part_id IS NULL DO UPDATE
           SET quantity = excluded.quantity, recorded_at = greatest(m.recorded_at, excluded.recorded_at), change_id = excluded.change_id
         WHERE p_correction OR m.recorded_at <= excluded.recorded_at;
    END IF;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    RETURN v_rows > 0;
END
$$;
