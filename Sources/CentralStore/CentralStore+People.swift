import Foundation
import PostgresNIO
import TeamworkModel

extension CentralStore {
    public func addPerson(_ new: NewPerson) async throws -> Person {
        try await transaction { connection in
            let rows = try await connection.query(
                """
                INSERT INTO people AS p (first_name, last_name, email, role, avatar_url, skills)
                VALUES (\(new.firstName), \(new.lastName), \(new.email), \(new.role.rawValue), \(new.avatarURL),
                        \(new.skills))
                RETURNING \(unescaped: Columns.person)
                """,
                logger: logger
            ).collect()
            return try Person(row: rows[0])
        }
    }

    /// People sorted by last name, optionally only one role or one team's members.
    public func listPeople(role: Role? = nil, teamID: Int64? = nil) async throws -> [Person] {
        try await rows(
            """
            SELECT \(unescaped: Columns.person) FROM people p
            WHERE (\(role?.rawValue)::text IS NULL OR p.role = \(role?.rawValue))
              AND (\(teamID)::bigint IS NULL OR EXISTS (
                    SELECT 1 FROM team_memberships m WHERE m.person_id = p.id AND m.team_id = \(teamID)))
            ORDER BY lower(p.last_name), lower(p.first_name), p.id
            """
        ).map(Person.init(row:))
    }

    public func person(id: Int64) async throws -> Person {
        let found = try await rows("SELECT \(unescaped: Columns.person) FROM people p WHERE p.id = \(id)")
        guard let row = found.first else { throw TeamworkError.notFound("no person with id \(id)") }
        return try Person(row: row)
    }

    /// Finds a person by id (digits) or by email (case-insensitive).
    public func person(reference: String) async throws -> Person {
        if let id = Int64(reference) { return try await person(id: id) }
        let found = try await rows(
            "SELECT \(unescaped: Columns.person) FROM people p WHERE lower(p.email) = lower(\(reference))"
        )
        guard let row = found.first else { throw TeamworkError.notFound("no person with that email") }
        return try Person(row: row)
    }

    public func updatePerson(id: Int64, _ changes: PersonChanges) async throws -> Person {
        try await requireSite(changes.homeLocationID ?? nil)
        let setAvatar = changes.avatarURL != nil
        let avatar = changes.avatarURL ?? nil
        let setDefault = changes.defaultTeamID != nil
        let defaultTeam = changes.defaultTeamID ?? nil
        return try await transaction { connection in
            let rows = try await connection.query(
                """
                UPDATE people AS p SET
                    first_name = coalesce(\(changes.firstName), first_name),
                    last_name = coalesce(\(changes.lastName), last_name),
                    email = coalesce(\(changes.email), email),
                    role = coalesce(\(changes.role?.rawValue), role),
                    avatar_url = CASE WHEN \(setAvatar) THEN \(avatar) ELSE avatar_url END,
                    default_team_id = CASE WHEN \(setDefault) THEN \(defaultTeam) ELSE default_team_id END,
                    skills = coalesce(\(changes.skills)::text[], skills),
                    home_location_id = CASE WHEN \(changes.homeLocationID != nil) THEN \(changes.homeLocationID ?? nil)
                                            ELSE home_location_id END
                WHERE p.id = \(id)
                RETURNING \(unescaped: Columns.person)
                """,
                logger: logger
            ).collect()
            guard let row = rows.first else { throw TeamworkError.notFound("no person with id \(id)") }
            return try Person(row: row)
        }
    }

    /// Removes a person. Refused while tasks are assigned to them; their
    /// memberships and last-known location go with them.
    /// Someone leaves: their tokens are revoked at once, they are no longer a
    /// candidate or an assignee, and every task and history entry keeps their
    /// name. Refused while tasks are still theirs to do (the refusal lists them:
    /// reassign them first). Returns the person and how many tokens were revoked.
    public func deactivatePerson(id: Int64) async throws -> (person: Person, revokedTokens: Int) {
        try await transaction { connection in
            // The person first: an assignment racing this one waits for it (the trigger reads the row FOR SHARE).
            _ = try await connection.query("SELECT 1 FROM people WHERE id = \(id) FOR UPDATE", logger: logger).collect()
            let unfinished = try await connection.query(
                """
                SELECT k.id FROM tasks k WHERE k.assignee_id = \(id) AND k.status IN ('assigned', 'in_progress')
                ORDER BY k.id FOR UPDATE
                """, logger: logger
            ).collect().map { try $0.decode(Int64.self) }
            if !unfinished.isEmpty {
                let shown = unfinished.prefix(20).map(String.init).joined(separator: ", ") + (unfinished.count > 20 ? ", …" : "")
                throw TeamworkError.conflict(
                    "person \(id) still has \(quantity(unfinished.count, "unfinished task")): \(shown); "
                        + "give them to someone else first (`teamwork-manager task assign ID --assignee ...`)")
            }
            // The person's row is locked: no token is issued until this commits (teamwork_issue_token).
            let live = try await connection.query(
                "SELECT count(*)::int FROM access_tokens WHERE person_id = \(id) AND revoked_at IS NULL", logger: logger
            ).collect()
            // The trigger people_revoke_tokens_on_leave revokes their tokens in this statement.
            let rows = try await connection.query(
                """
                UPDATE people AS p SET deactivated_at = coalesce(p.deactivated_at, now()) WHERE p.id = \(id)
                RETURNING \(unescaped: Columns.person)
                """, logger: logger
            ).collect()
            guard let row = rows.first else { throw TeamworkError.notFound("no person with id \(id)") }
            return (try Person(row: row), try live.first?.decode(Int.self) ?? 0)
        }
    }

    /// Someone comes back: they may be given work again. Their old tokens stay
    /// revoked; issue a new one (`person token issue`).
    public func reactivatePerson(id: Int64) async throws -> Person {
        let rows = try await rows(
            "UPDATE people AS p SET deactivated_at = NULL WHERE p.id = \(id) RETURNING \(unescaped: Columns.person)"
        )
        guard let row = rows.first else { throw TeamworkError.notFound("no person with id \(id)") }
        return try Person(row: row)
    }

    public func removePerson(id: Int64) async throws {
        try await transaction { connection in
            let open = try await connection.query(
                "SELECT count(*) FROM tasks WHERE assignee_id = \(id)", logger: logger
            ).collect()
            let count = try open.first?.decode(Int.self) ?? 0
            if count > 0 {
                throw TeamworkError.conflict(
                    "person \(id) still has \(quantity(count, "task")) assigned; someone who has worked here is "
                        + "deactivated, not removed (`teamwork-manager person deactivate`)")
            }
            let deleted = try await connection.query("DELETE FROM people WHERE id = \(id) RETURNING id", logger: logger).collect()
            if deleted.isEmpty { throw TeamworkError.notFound("no person with id \(id)") }
        }
    }
}
