-- Why p_value cannot answer the checklist item p_item, or NULL when it can: the
-- master's copy of ChecklistItem.problem(with:) (TeamworkModel). Both are held
-- to Tests/Contract/checklist-answers.json (ChecklistContractTests), so the
-- device, the sync endpoint and the master take exactly the same answers.
CREATE OR REPLACE FUNCTION teamwork_checklist_problem(p_item jsonb, p_value text)
RETURNS text LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_number numeric;
    v_unit   text := coalesce(' ' || (p_item ->> 'unit'), '');
BEGIN
    IF p_value IS NULL THEN
        RETURN 'an answer needs a value';
    END IF;
    IF octet_length(p_value) > 2000 THEN
        RETURN 'an answer has at most 2000 bytes';
    END IF;
    CASE p_item ->> 'kind'
    WHEN 'check' THEN
        IF p_value NOT IN ('yes', 'no') THEN
            RETURN 'answer yes or no';
        END IF;
    WHEN 'text' THEN
        IF btrim(p_value, E' \t\n\r\u000B\u000C\u0085\u00A0\u2028\u2029') = '' THEN
            RETURN 'the answer is empty';
        END IF;
        IF p_value ~ '[\u0001-\u0008\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]' THEN
            RETURN 'the answer holds control characters';
        END IF;
    WHEN 'number' THEN
        IF p_value !~ '^-?[0-9]{1,12}(\.[0-9]{1,6})?$' THEN
            RETURN 'answer a number like 48213 or -0.5 (at most 12 digits, 6 after the point)';
        END IF;
        v_number := p_value::numeric;
        IF p_item ? 'min' AND v_number < (p_item ->> 'min')::numeric THEN
            RETURN format('the least taken is %s%s', p_item ->> 'min', v_unit);
        END IF;
        IF p_item ? 'max' AND v_number > (p_item ->> 'max')::numeric THEN
            RETURN format('the most taken is %s%s', p_item ->> 'max', v_unit);
        END IF;
    WHEN 'choice' THEN
        IF NOT coalesce(p_item -> 'options' ? p_value AND jsonb_typeof(p_item -> 'options') = 'array', false) THEN
            RETURN 'answer one of: ' || coalesce((SELECT string_agg(o, ', ' ORDER BY n)
                                                    FROM jsonb_array_elements_text(p_item -> 'options') WITH ORDINALITY AS x (o, n)), '');
        END IF;
    WHEN 'photo', 'signature' THEN
        RETURN format('a %s item is answered by attaching a file, not by a value', p_item ->> 'kind');
    ELSE
        RETURN format('the item''s kind %s is not known', coalesce(p_item ->> 'kind', 'NULL'));
    END CASE;
    RETURN NULL;
END
$$;

-- The keys of p_items' required items p_answers has no answer for, in the
-- checklist's order (empty when none): ChecklistForm.missing(in:).
CREATE OR REPLACE FUNCTION teamwork_checklist_missing(p_items jsonb, p_answers jsonb)
RETURNS text[] LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT coalesce(array_agg(i ->> 'key' ORDER BY n), '{}')
      FROM jsonb_array_elements(coalesce(p_items, '[]')) WITH ORDINALITY AS x (i, n)
     WHERE coalesce((i ->> 'required')::boolean, false) AND NOT coalesce(p_answers, '{}') ? (i ->> 'key')
$$;

-- The keys of p_items' items p_answers marks as failed (a check answered no), in
-- the checklist's order: ChecklistForm.failed(in:).
CREATE OR REPLACE FUNCTION teamwork_checklist_failed(p_items jsonb, p_answers jsonb)
RETURNS text[] LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT coalesce(array_agg(i ->> 'key' ORDER BY n), '{}')
      FROM jsonb_array_elements(coalesce(p_items, '[]')) WITH ORDINALITY AS x (i, n)
     WHERE i ->> 'kind' = 'check' AND coalesce(p_answers, '{}') -> (i ->> 'key') ->> 'value' = 'no'
$$;
