-- Planning the day (docs/day-planning.md): who works when, from where, for how
-- long a job takes, and when the planner expects a worker at each task.
--
-- Working hours are a weekly pattern per person on their team's clock (ISO
-- weekdays, 1 = Monday; a weekday without a row is a day off once a person has
-- any row), with dated exceptions (other hours that day, or none: a day off).
-- A person with no pattern works the hours the planner is given. Absences are
-- instants (a sick call at 11:00 ends the day from then). None of these travel
-- to devices: a colleague's sick leave is not the team's business.
CREATE TABLE working_hours (
    person_id bigint NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    weekday   smallint NOT NULL CHECK (weekday BETWEEN 1 AND 7),
    starts    time NOT NULL,
    ends      time NOT NULL,
    PRIMARY KEY (person_id, weekday),
    CHECK (starts < ends)
);

CREATE TABLE working_day_exceptions (
    person_id bigint NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    day       date NOT NULL,
    -- Both or neither: neither is a day off.
    starts    time,
    ends      time,
    PRIMARY KEY (person_id, day),
    CHECK ((starts IS NULL) = (ends IS NULL) AND (starts IS NULL OR starts < ends))
);

CREATE TABLE absences (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    person_id  bigint NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    starts_at  timestamptz NOT NULL,
    ends_at    timestamptz NOT NULL,
    reason     text NOT NULL CHECK (reason IN ('vacation', 'sick', 'training', 'other')),
    note       text NOT NULL DEFAULT '' CHECK (length(note) <= 200),
    created_by bigint REFERENCES people (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK (starts_at < ends_at AND ends_at - starts_at <= interval '366 days')
);
CREATE INDEX absences_person_idx ON absences (person_id, ends_at);

-- Where a worker starts and ends the day: their own place, else their team's depot.
ALTER TABLE people ADD COLUMN home_location_id bigint REFERENCES locations (id) ON DELETE SET NULL;
ALTER TABLE teams ADD COLUMN depot_location_id bigint REFERENCES locations (id) ON DELETE SET NULL;
-- How long a job takes when a task does not say, and how drives are estimated.
ALTER TABLE teams ADD COLUMN task_minutes integer NOT NULL DEFAULT 45 CHECK (task_minutes BETWEEN 1 AND 720);
ALTER TABLE teams ADD COLUMN travel_area text NOT NULL DEFAULT 'urban' CHECK (travel_area IN ('urban', 'rural'));

-- A task's own time on site; pinned work the planner never moves; and the
-- planner's expected start (the ETA), which travels to devices with the task.
ALTER TABLE tasks ADD COLUMN duration_minutes integer CHECK (duration_minutes BETWEEN 1 AND 720);
ALTER TABLE tasks ADD COLUMN pinned boolean NOT NULL DEFAULT false;
ALTER TABLE tasks ADD COLUMN planned_start timestamptz;

GRANT SELECT, INSERT, UPDATE, DELETE ON working_hours, working_day_exceptions, absences TO teamwork_manager;
GRANT SELECT ON working_hours, working_day_exceptions, absences TO teamwork_service;
