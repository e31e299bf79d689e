-- A recurring plan's occurrences take this many minutes on site (the day
-- planner's; NULL: their team's default). Not the window's length
-- (duration_minutes), which says when the customer expects the crew.
ALTER TABLE plans ADD COLUMN task_minutes integer CHECK (task_minutes BETWEEN 1 AND 720);
