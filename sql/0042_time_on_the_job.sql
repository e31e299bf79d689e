-- Time on the job (issue 53, docs/dispatch.md "Time on the job"): per person, task
-- and kind (work or travel), one entry from a start to an end, for payroll
-- (report timesheet) and billing (labour in task.costed).
--
-- Where an entry comes from (source):
--   auto     the worker's own actions (tasks_time_entries): their start opens their
--            work, their completion ends it; completing a task opens their travel to
--            their next task of the day, which their start there ends. What ends an
--            open automatic entry otherwise: travel is dropped when the person starts
--            another task, or the task leaves them (reassigned, cancelled, moved to
--            another day); work stops when the task leaves them. An automatic entry
--            never lasts more than a day: one whose end would come later stays open
--            (counted nowhere) until someone enters the time.
--   worker   the field change 'time' (item the kind, value START/END): taken in once
--            like every other, by anyone whose replica holds the task (several people
--            on one task), before or after it is completed; it replaces an automatic
--            entry, which never overwrites it; an older change than the entry's is
--            'superseded'; an interval of no length is kept as a removed entry.
--   manager  teamwork_correct_time (a manager's correction, in the task's history).
CREATE TABLE time_entries (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id     bigint NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    person_id   bigint NOT NULL REFERENCES people (id),
    kind        text NOT NULL CHECK (kind IN ('work', 'travel')),
    started_at  timestamptz NOT NULL,
    -- NULL: an automatic entry still running.
    ended_at    timestamptz,
    source      text NOT NULL CHECK (source IN ('auto', 'worker', 'manager')),
    recorded_at timestamptz NOT NULL,
    change_id   text,
    UNIQUE (task_id, person_id, kind),
    CHECK (ended_at IS NULL OR (ended_at >= started_at AND ended_at - started_at <= interval '24 hours')),
    CHECK (ended_at IS NOT NULL OR source = 'auto')
);
CREATE INDEX time_entries_person_idx ON time_entries (person_id, started_at);
CREATE INDEX time_entries_open_idx ON time_entries (person_id) WHERE ended_at IS NULL;
-- A week's timesheet reads the entries begun from three days before it (an entry lasts at most a day).
CREATE INDEX time_entries_started_idx ON time_entries (started_at);
GRANT SELECT ON time_entries TO teamwork_manager, teamwork_service;

ALTER TABLE field_changes DROP CONSTRAINT field_changes_operation_check;
ALTER TABLE field_changes ADD CONSTRAINT field_changes_operation_check
    CHECK (operation IN ('start', 'complete', 'reopen', 'claim', 'checkin', 'answer', 'attach', 'use', 'time'));
-- 'invalid_time': not work or travel, not an interval, ending before it starts, longer than a day.
ALTER TABLE field_changes DROP CONSTRAINT field_changes_conflict_check;
ALTER TABLE field_changes ADD CONSTRAINT field_changes_conflict_check
    CHECK (conflict IN ('rejected', 'deleted', 'cancelled', 'moved', 'reassigned', 'already_completed',
                        'not_completed', 'claimed_by_other', 'not_a_member', 'invalid', 'missing_skills',
                        'invalid_answer', 'missing_answers', 'invalid_attachment', 'invalid_material', 'superseded',
                        'invalid_time'));

-- The bodies live in sql/functions.
CREATE FUNCTION teamwork_time_instant(text) RETURNS timestamptz LANGUAGE sql AS $$ SELECT NULL::timestamptz $$;
CREATE FUNCTION teamwork_travel_from(bigint, timestamptz, timestamptz) RETURNS timestamptz LANGUAGE sql AS $$ SELECT $2 $$;
CREATE FUNCTION tasks_time_entries() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
-- Triggers of one event fire in the order of their names: this one before tasks_outbox_updated,
-- so a completion's task.completed and task.costed carry the work it ends.
CREATE TRIGGER tasks_keep_time_entries AFTER UPDATE ON tasks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION tasks_time_entries();
CREATE FUNCTION teamwork_time_problem(text, text, timestamptz) RETURNS text LANGUAGE sql AS $$ SELECT NULL::text $$;
CREATE FUNCTION teamwork_set_time_entry(bigint, bigint, text, text, text, timestamptz, text) RETURNS text
    LANGUAGE sql AS $$ SELECT NULL::text $$;
-- Only the definer functions that check first write an entry.
REVOKE ALL ON FUNCTION teamwork_set_time_entry(bigint, bigint, text, text, text, timestamptz, text) FROM PUBLIC;
CREATE FUNCTION teamwork_correct_time(bigint, bigint, text, text) RETURNS void LANGUAGE sql AS $$ SELECT $$;
REVOKE ALL ON FUNCTION teamwork_correct_time(bigint, bigint, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_correct_time(bigint, bigint, text, text) TO teamwork_manager;
