-- Time is recorded by who worked it, once (issue 64, docs/dispatch.md "Time on the job"):
--   not_held              a worker records time only on a task they hold or held (its assignee at
--                         some point, or their own claim, start or completion of it)
--   time_overlap          a person's entries never overlap one another (work or travel, across tasks)
--   period_closed         nothing is recorded on or before the last day payroll closed
--   corrected_by_manager  a worker's later entry over a manager's correction waits for a decision
-- The rules' bodies live in sql/functions (teamwork_time_held, teamwork_time_clash,
-- teamwork_time_closed, teamwork_close_payroll).
ALTER TABLE field_changes DROP CONSTRAINT field_changes_conflict_check;
ALTER TABLE field_changes ADD CONSTRAINT field_changes_conflict_check
    CHECK (conflict IN ('rejected', 'deleted', 'cancelled', 'moved', 'reassigned', 'already_completed',
                        'not_completed', 'claimed_by_other', 'not_a_member', 'invalid', 'missing_skills',
                        'invalid_answer', 'missing_answers', 'invalid_attachment', 'invalid_material', 'superseded',
                        'invalid_time', 'not_held', 'time_overlap', 'period_closed', 'corrected_by_manager'));

-- Payroll's closed periods: each row closes every day up to and including `through` (a Sunday, on
-- each entry's task's clock). Rows are only added; the latest `through` is in force, and the rows
-- are the history of who closed what and when.
CREATE TABLE payroll_closes (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    week       text NOT NULL CHECK (week ~ '^[0-9]{4}-W[0-9]{2}$'),
    through    date NOT NULL,
    closed_by  bigint REFERENCES people (id),
    closed_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payroll_closes_through_idx ON payroll_closes (through DESC);
GRANT SELECT ON payroll_closes TO teamwork_manager, teamwork_service;

-- A person's closed entries, by when they began: what an overlap is looked for in.
CREATE INDEX time_entries_person_span_idx ON time_entries (person_id, started_at, ended_at) WHERE ended_at > started_at;

-- A task's task.costed events, which merge (teamwork_outbox_add).
CREATE INDEX outbox_events_task_idx ON outbox_events (task_id, event);

-- The bodies live in sql/functions.
CREATE FUNCTION teamwork_close_payroll(text, date) RETURNS void LANGUAGE sql AS $$ SELECT $$;
REVOKE ALL ON FUNCTION teamwork_close_payroll(text, date) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_close_payroll(text, date) TO teamwork_manager;
