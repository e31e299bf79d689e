-- Recurring work: a plan makes a task for each day its rule gives (a subset
-- of RFC 5545 RRULE, expanded by the tools: docs/dispatch.md), at a wall-clock
-- time in the plan's zone (its location's, else its team's, else its
-- assignee's default team's: the zone its tasks get), up to its horizon.
--
-- Each occurrence is one task with a unique (plan, day): generation inserts
-- with ON CONFLICT DO NOTHING, so generating twice, or from two processes at
-- once, makes each task once. When a plan changes, its future occurrences
-- nobody touched are cancelled (cancel_reason 'plan changed') and marked
-- superseded, which takes them out of the uniqueness so they are made anew;
-- touched ones (edited, claimed, started, completed) stand for their day.
CREATE TABLE plans (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    title            text NOT NULL CHECK (btrim(title) <> ''),
    description      text NOT NULL DEFAULT '',
    priority         text NOT NULL DEFAULT 'normal' CHECK (priority IN ('low', 'normal', 'high', 'urgent')),
    team_id          bigint REFERENCES teams (id) ON DELETE RESTRICT,
    assignee_id      bigint REFERENCES people (id) ON DELETE RESTRICT,
    location_id      bigint REFERENCES locations (id) ON DELETE RESTRICT,
    required_skills  text[] NOT NULL DEFAULT '{}',
    rrule            text NOT NULL CHECK (length(rrule) BETWEEN 1 AND 256),
    starts_on        date NOT NULL,
    window_start     time NOT NULL,
    duration_minutes integer NOT NULL CHECK (duration_minutes BETWEEN 1 AND 44640),
    due_days         integer NOT NULL DEFAULT 0 CHECK (due_days BETWEEN 0 AND 365),
    horizon_days     integer NOT NULL DEFAULT 30 CHECK (horizon_days BETWEEN 1 AND 366),
    paused_at        timestamptz,
    created_by       bigint REFERENCES people (id) ON DELETE SET NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    version          integer NOT NULL DEFAULT 1,
    CHECK (team_id IS NOT NULL OR assignee_id IS NOT NULL)
);

-- A day of a plan skipped (moved_to NULL) or moved to another day.
CREATE TABLE plan_exceptions (
    plan_id   bigint NOT NULL REFERENCES plans (id) ON DELETE CASCADE,
    occurs_on date NOT NULL,
    moved_to  date,
    PRIMARY KEY (plan_id, occurs_on)
);

ALTER TABLE tasks ADD COLUMN plan_id bigint REFERENCES plans (id) ON DELETE SET NULL;
ALTER TABLE tasks ADD COLUMN plan_date date;
ALTER TABLE tasks ADD COLUMN plan_superseded boolean NOT NULL DEFAULT false;
ALTER TABLE tasks ADD COLUMN cancel_reason text CHECK (length(cancel_reason) <= 200);
ALTER TABLE tasks ADD CONSTRAINT tasks_plan_day CHECK ((plan_id IS NULL) OR (plan_date IS NOT NULL));
CREATE UNIQUE INDEX tasks_plan_occurrence ON tasks (plan_id, plan_date) WHERE plan_id IS NOT NULL AND NOT plan_superseded;

GRANT SELECT, INSERT, UPDATE, DELETE ON plans, plan_exceptions TO teamwork_manager;
GRANT SELECT ON plans, plan_exceptions TO teamwork_service;

-- The bodies live in sql/functions/teamwork_generate_occurrences.sql. The service makes
-- occurrences only through them (it may not write tasks otherwise).
CREATE FUNCTION teamwork_generate_occurrences(bigint, integer, date[], timestamptz[], timestamptz[], timestamptz[])
    RETURNS integer LANGUAGE sql AS $$ SELECT 0 $$;
CREATE FUNCTION teamwork_supersede_occurrences(bigint, date, date, text)
    RETURNS integer LANGUAGE sql AS $$ SELECT 0 $$;
REVOKE ALL ON FUNCTION teamwork_generate_occurrences(bigint, integer, date[], timestamptz[], timestamptz[], timestamptz[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION teamwork_supersede_occurrences(bigint, date, date, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION teamwork_generate_occurrences(bigint, integer, date[], timestamptz[], timestamptz[], timestamptz[])
    TO teamwork_manager, teamwork_service;
GRANT EXECUTE ON FUNCTION teamwork_supersede_occurrences(bigint, date, date, text) TO teamwork_manager;
