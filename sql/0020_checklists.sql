-- Checklists: what a worker checks, reads or chooses on a job, as proof of work.
--
-- A checklist is a name and its published versions; a version's items never
-- change (a trigger refuses it), so changing a checklist publishes the next
-- version. A task names one version and keeps it: the form a worker has
-- offline never changes under them. The items are the JSON the tools write
-- (TeamworkModel.ChecklistItem): key, kind, label, required, and unit/min/max
-- for a number, options for a choice.
--
-- Answers are worker changes (operation 'answer', item, value), taken in by
-- teamwork_apply_field_changes_in_replica like any other: the latest answer
-- per item is the task's `answers` ({"key": {"value", "by", "at" (ms)}}), and
-- the ledger keeps every one. A task cannot be completed while a required item
-- has no answer ('missing_answers'); an answer the item does not take, or to an
-- item the task's checklist does not have, is 'invalid_answer'.
CREATE TABLE checklists (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9 ._-]{0,79}$'),
    created_by bigint REFERENCES people (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE checklist_versions (
    checklist_id bigint NOT NULL REFERENCES checklists (id) ON DELETE RESTRICT,
    version      integer NOT NULL CHECK (version >= 1),
    items        jsonb NOT NULL CHECK (jsonb_typeof(items) = 'array' AND jsonb_array_length(items) BETWEEN 1 AND 100),
    created_by   bigint REFERENCES people (id) ON DELETE SET NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (checklist_id, version)
);

CREATE FUNCTION checklist_versions_published() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'checklist % version % is published and never changes; publish a new version instead',
        OLD.checklist_id, OLD.version USING ERRCODE = '55000';
END
$$;
CREATE TRIGGER checklist_versions_never_change BEFORE UPDATE OR DELETE ON checklist_versions
    FOR EACH ROW EXECUTE FUNCTION checklist_versions_published();

ALTER TABLE tasks ADD COLUMN checklist_id bigint;
ALTER TABLE tasks ADD COLUMN checklist_version integer;
ALTER TABLE tasks ADD CONSTRAINT tasks_checklist_fk FOREIGN KEY (checklist_id, checklist_version)
    REFERENCES checklist_versions (checklist_id, version) ON DELETE RESTRICT;
ALTER TABLE tasks ADD CONSTRAINT tasks_checklist_both CHECK ((checklist_id IS NULL) = (checklist_version IS NULL));
ALTER TABLE tasks ADD COLUMN answers jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(answers) = 'object');
CREATE INDEX tasks_checklist_idx ON tasks (checklist_id) WHERE checklist_id IS NOT NULL;

ALTER TABLE plans ADD COLUMN checklist_id bigint REFERENCES checklists (id) ON DELETE RESTRICT;

ALTER TABLE field_changes ADD COLUMN item text;
ALTER TABLE field_changes ADD COLUMN value text;
ALTER TABLE field_changes DROP CONSTRAINT field_changes_operation_check;
ALTER TABLE field_changes ADD CONSTRAINT field_changes_operation_check
    CHECK (operation IN ('start', 'complete', 'reopen', 'claim', 'checkin', 'answer'));
ALTER TABLE field_changes DROP CONSTRAINT field_changes_conflict_check;
ALTER TABLE field_changes ADD CONSTRAINT field_changes_conflict_check
    CHECK (conflict IN ('rejected', 'deleted', 'cancelled', 'moved', 'reassigned', 'already_completed',
                        'not_completed', 'claimed_by_other', 'not_a_member', 'invalid', 'missing_skills',
                        'invalid_answer', 'missing_answers'));

ALTER TYPE teamwork_worker_change ADD ATTRIBUTE item text;
ALTER TYPE teamwork_worker_change ADD ATTRIBUTE value text;

GRANT SELECT, INSERT ON checklists, checklist_versions TO teamwork_manager;
GRANT SELECT ON checklists, checklist_versions TO teamwork_service;
GRANT UPDATE (answers) ON tasks TO teamwork_service;

-- The bodies live in sql/functions/teamwork_checklist_problem.sql.
CREATE FUNCTION teamwork_checklist_problem(jsonb, text) RETURNS text LANGUAGE sql AS $$ SELECT NULL::text $$;
CREATE FUNCTION teamwork_checklist_missing(jsonb, jsonb) RETURNS text[] LANGUAGE sql AS $$ SELECT NULL::text[] $$;
CREATE FUNCTION teamwork_checklist_failed(jsonb, jsonb) RETURNS text[] LANGUAGE sql AS $$ SELECT NULL::text[] $$;
