-- Where a worker last checked in reaches managers and that worker; their
-- teammates see it only if the team says so (off unless a manager turns it
-- on). The sync endpoint serves positions from here (GET /v1/positions), never
-- through the replicas, so no copy of anyone's position outlives the setting.
ALTER TABLE teams ADD COLUMN shares_positions boolean NOT NULL DEFAULT false;
