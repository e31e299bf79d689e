-- What was used (sql/0037), after review: a removed line stays as a line of
-- quantity 0 (read as removed), so an older change arriving late (made offline
-- before the removal) cannot bring it back; and a change older than the line it
-- would set is not applied ('superseded', sent back to the worker like any refusal).
ALTER TABLE task_materials DROP CONSTRAINT task_materials_quantity_check;
ALTER TABLE task_materials ADD CONSTRAINT task_materials_quantity_check CHECK (quantity >= 0 AND quantity <= 100000);
ALTER TABLE field_changes DROP CONSTRAINT field_changes_conflict_check;
ALTER TABLE field_changes ADD CONSTRAINT field_changes_conflict_check
    CHECK (conflict IN ('rejected', 'deleted', 'cancelled', 'moved', 'reassigned', 'already_completed',
                        'not_completed', 'claimed_by_other', 'not_a_member', 'invalid', 'missing_skills',
                        'invalid_answer', 'missing_answers', 'invalid_attachment', 'invalid_material', 'superseded'));
