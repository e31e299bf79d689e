-- What a worker used on a task (issue 53, docs/dispatch.md "Parts"): a field change
-- (operation 'use': `item` a part's code, or no item and the line's description in
-- `note`; `value` the quantity), taken in once like every other, and kept here as one
-- line per task, person and part (or description). Recording it again sets the
-- quantity (a correction before the task is completed); 0 removes the line. The unit
-- and the price are the catalogue's when the line was recorded, so a later price
-- change does not rewrite a finished job's cost. The ledger (field_changes) keeps
-- every change, and the task's history says who recorded what.
CREATE TABLE task_materials (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id      bigint NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    person_id    bigint NOT NULL REFERENCES people (id),
    part_id      bigint REFERENCES parts (id),
    description  text CHECK (octet_length(description) <= 200 AND btrim(description) <> ''),
    quantity     numeric(9, 3) NOT NULL CHECK (quantity > 0 AND quantity <= 100000),
    unit         text,
    unit_price   numeric(13, 4),
    currency     text,
    recorded_at  timestamptz NOT NULL,
    change_id    text NOT NULL,
    CHECK ((part_id IS NULL) <> (description IS NULL)),
    CHECK ((unit_price IS NULL) = (currency IS NULL))
);
CREATE UNIQUE INDEX task_materials_part_key ON task_materials (task_id, person_id, part_id) WHERE part_id IS NOT NULL;
CREATE UNIQUE INDEX task_materials_line_key ON task_materials (task_id, person_id, lower(description)) WHERE part_id IS NULL;
CREATE INDEX task_materials_part_idx ON task_materials (part_id);
GRANT SELECT ON task_materials TO teamwork_manager;

ALTER TABLE field_changes DROP CONSTRAINT field_changes_operation_check;
ALTER TABLE field_changes ADD CONSTRAINT field_changes_operation_check
    CHECK (operation IN ('start', 'complete', 'reopen', 'claim', 'checkin', 'answer', 'attach', 'use'));
-- 'invalid_material': a quantity out of bounds, a part not in the catalogue or retired.
ALTER TABLE field_changes DROP CONSTRAINT field_changes_conflict_check;
ALTER TABLE field_changes ADD CONSTRAINT field_changes_conflict_check
    CHECK (conflict IN ('rejected', 'deleted', 'cancelled', 'moved', 'reassigned', 'already_completed',
                        'not_completed', 'claimed_by_other', 'not_a_member', 'invalid', 'missing_skills',
                        'invalid_answer', 'missing_answers', 'invalid_attachment', 'invalid_material'));
