import Foundation
import PostgresNIO
import TeamworkModel

extension CentralStore {
    public func addTeam(_ new: NewTeam) async throws -> Team {
        try await transaction { connection in
            let rows = try await connection.query(
                """
                INSERT INTO teams AS t (slug, name, description, color, created_by, shares_positions, time_zone)
                VALUES (\(new.slug), \(new.name), \(new.description), \(new.color), \(actorID), \(new.sharesPositions), \(new.timeZone))
                RETURNING \(unescaped: Columns.team)
                """,
                logger: logger
            ).collect()
            return try Team(row: rows[0])
        }
    }

    /// Teams with their member and open-task counts, sorted by slug.
    public func listTeams() async throws -> [(team: Team, members: Int, openTasks: Int)] {
        try await rows(
            """
            SELECT \(unescaped: Columns.team),
                   (SELECT count(*) FROM team_memberships m WHERE m.team_id = t.id) AS members,
                   (SELECT count(*) FROM tasks k WHERE k.team_id = t.id AND k.status NOT IN ('completed', 'cancelled')) AS open_tasks
            FROM teams t ORDER BY t.slug
            """
        ).map { row in
            let r = PostgresRandomAccessRow(row)
            return (try Team(row: row), try r["members"].decode(Int.self), try r["open_tasks"].decode(Int.self))
        }
    }

    public func team(id: Int64) async throws -> Team {
        let found = try await rows("SELECT \(unescaped: Columns.team) FROM teams t WHERE t.id = \(id)")
        guard let row = found.first else { throw TeamworkError.notFound("no team with id \(id)") }
        return try Team(row: row)
    }

    /// Finds a team by id (digits) or slug.
    public func team(reference: String) async throws -> Team {
        if let id = Int64(reference) { return try await team(id: id) }
        let found = try await rows("SELECT \(unescaped: Columns.team) FROM teams t WHERE t.slug = \(reference)")
        guard let row = found.first else { throw TeamworkError.notFound("no team with slug '\(reference)'") }
        return try Team(row: row)
    }

    /// Changes a team. A new time zone moves its plans' clocks too: their untouched occurrences
    /// from today on are cancelled ('time zone changed') and made anew on the new wall clock.
    public func updateTeam(id: Int64, _ changes: TeamChanges) async throws -> Team {
        try await requireSite(changes.depotLocationID ?? nil)
        let setColor = changes.color != nil
        let color = changes.color ?? nil
        var replanned: [Int64] = []
        let team = try await transaction { connection in
            if let zone = changes.timeZone {
                // Before the zone changes (which touches the tasks it moves): the plans whose clock it is.
                replanned = try await connection.query(
                    """
                    SELECT pl.id FROM plans pl JOIN teams t ON t.id = \(id)
                    WHERE t.time_zone <> \(zone) AND pl.paused_at IS NULL
                      AND (pl.team_id = t.id
                           OR (pl.team_id IS NULL AND EXISTS (SELECT 1 FROM people p WHERE p.id = pl.assignee_id
                                                                                      AND p.default_team_id = t.id)))
                      AND NOT EXISTS (SELECT 1 FROM locations l WHERE l.id = pl.location_id AND l.time_zone IS NOT NULL)
                    FOR UPDATE OF pl
                    """, logger: logger
                ).collect().map { try $0.decode(Int64.self) }
                for plan in replanned {
                    _ = try await connection.query(
                        """
                        SELECT teamwork_supersede_occurrences(\(plan), (now() AT TIME ZONE \(zone))::date, NULL, 'time zone changed')
                        """, logger: logger
                    ).collect()
                    try await connection.query(
                        "UPDATE plans SET version = version + 1, updated_at = now() WHERE id = \(plan)", logger: logger)
                }
            }
            let rows = try await connection.query(
                """
                UPDATE teams AS t SET
                    slug = coalesce(\(changes.slug), slug),
                    name = coalesce(\(changes.name), name),
                    description = coalesce(\(changes.description), description),
                    color = CASE WHEN \(setColor) THEN \(color) ELSE color END,
                    shares_positions = coalesce(\(changes.sharesPositions), shares_positions),
                    time_zone = coalesce(\(changes.timeZone), time_zone),
                    depot_location_id = CASE WHEN \(changes.depotLocationID != nil) THEN \(changes.depotLocationID ?? nil)
                                             ELSE depot_location_id END,
                    task_minutes = coalesce(\(changes.taskMinutes), task_minutes),
                    travel_area = coalesce(\(changes.travelArea?.rawValue), travel_area)
                WHERE t.id = \(id)
                RETURNING \(unescaped: Columns.team)
                """,
                logger: logger
            ).collect()
            guard let row = rows.first else { throw TeamworkError.notFound("no team with id \(id)") }
            return try Team(row: row)
        }
        for plan in replanned { _ = try await generatePlans(only: plan) }
        return team
    }

    /// Removes a team. Refused while tasks belong to it (move, complete-and-delete
    /// or delete them first), so no task is ever orphaned.
    public func removeTeam(id: Int64) async throws {
        try await transaction { connection in
            let counted = try await connection.query("SELECT count(*) FROM tasks WHERE team_id = \(id)", logger: logger).collect()
            let count = try counted.first?.decode(Int.self) ?? 0
            if count > 0 {
                throw TeamworkError.conflict("team \(id) still has \(quantity(count, "task")); move or delete them first")
            }
            let deleted = try await connection.query("DELETE FROM teams WHERE id = \(id) RETURNING id", logger: logger).collect()
            if deleted.isEmpty { throw TeamworkError.notFound("no team with id \(id)") }
        }
    }

    public func members(teamID: Int64) async throws -> [TeamMember] {
        _ = try await team(id: teamID)
        return try await rows(
            """
            SELECT \(unescaped: Columns.person), m.joined_at
            FROM team_memberships m JOIN people p ON p.id = m.person_id
            WHERE m.team_id = \(teamID)
            ORDER BY lower(p.last_name), lower(p.first_name), p.id
            """
        ).map { row in
            TeamMember(
                teamID: teamID, person: try Person(row: row), joinedAt: try PostgresRandomAccessRow(row)["joined_at"].decode(Date.self))
        }
    }

    /// The teams a person belongs to, sorted by slug.
    public func teams(ofPerson personID: Int64) async throws -> [Team] {
        try await rows(
            """
            SELECT \(unescaped: Columns.team) FROM teams t
            JOIN team_memberships m ON m.team_id = t.id AND m.person_id = \(personID)
            ORDER BY t.slug
            """
        ).map(Team.init(row:))
    }

    public func addMember(teamID: Int64, personID: Int64) async throws {
        _ = try await team(id: teamID)
        _ = try await person(id: personID)
        try await transaction { connection in
            try await connection.query(
                "INSERT INTO team_memberships (team_id, person_id) VALUES (\(teamID), \(personID))", logger: logger
            )
            // A person's first team is their default (their clock, where their personal work shows).
            try await connection.query(
                "UPDATE people SET default_team_id = \(teamID) WHERE id = \(personID) AND default_team_id IS NULL", logger: logger
            )
        }
    }

    /// Removes a member. Their open tasks in the team go back to the team as
    /// free-floating work (recorded in each task's history); returns how many.
    @discardableResult
    public func removeMember(teamID: Int64, personID: Int64) async throws -> Int {
        try await transaction { connection in
            let released = try await connection.query(
                """
                UPDATE tasks SET assignee_id = NULL, status = 'open', started_at = NULL
                WHERE team_id = \(teamID) AND assignee_id = \(personID) AND status NOT IN ('completed', 'cancelled')
                RETURNING id
                """,
                logger: logger
            ).collect()
            let deleted = try await connection.query(
                "DELETE FROM team_memberships WHERE team_id = \(teamID) AND person_id = \(personID) RETURNING team_id",
                logger: logger
            ).collect()
            if deleted.isEmpty { throw TeamworkError.notFound("person \(personID) is not a member of team \(teamID)") }
            return released.count
        }
    }
}
