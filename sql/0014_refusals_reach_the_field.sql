-- The master's word is final everywhere: a worker change the master does not
-- take although a replica already showed it (any rule, or set aside as invalid)
-- appends a 'refusal' entry to the change feed in the same transaction, routed
-- to the replica the change came from (team_id, or assignee_id for a person's).
-- The generator then writes the master's view of the task over the replica's
-- and the ledger's reason into the replica's refusals, which devices pull.

ALTER TABLE change_feed DROP CONSTRAINT change_feed_entity_check;
ALTER TABLE change_feed ADD CONSTRAINT change_feed_entity_check
    CHECK (entity IN ('task', 'person', 'team', 'membership', 'location', 'refusal'));

-- 'missing_skills': a claim, or a completion by someone the task is not
-- assigned to, from a person without every skill the task requires.
ALTER TABLE field_changes DROP CONSTRAINT field_changes_conflict_check;
ALTER TABLE field_changes ADD CONSTRAINT field_changes_conflict_check
    CHECK (conflict IN ('rejected', 'deleted', 'cancelled', 'moved', 'reassigned', 'already_completed',
                        'not_completed', 'claimed_by_other', 'not_a_member', 'invalid', 'missing_skills'));
