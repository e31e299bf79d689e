-- Let the replica generator stream tasks replica by replica, in id order,
-- straight from an index instead of sorting the whole master list first.
CREATE INDEX tasks_team_id_idx ON tasks (team_id, id) WHERE team_id IS NOT NULL;
CREATE INDEX tasks_personal_idx ON tasks (assignee_id, id) WHERE team_id IS NULL;
