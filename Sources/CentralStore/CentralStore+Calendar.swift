import Foundation
import PostgresNIO
import TeamworkModel

extension CentralStore {
    /// Gives `personID` a calendar feed, replacing any they had; the secret is returned here and never again.
    public func issueCalendarFeed(personID: Int64) async throws -> String {
        _ = try await person(id: personID)
        var generator = SystemRandomNumberGenerator()
        let secret =
            "twcal_"
            + Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        try await transaction { connection in
            try await connection.query(
                """
                INSERT INTO calendar_feeds (person_id, secret_hash, created_by)
                VALUES (\(personID), sha256(convert_to(\(secret), 'UTF8')), \(actorID))
                ON CONFLICT (person_id) DO UPDATE SET secret_hash = excluded.secret_hash, created_by = excluded.created_by,
                                                      created_at = now()
                """, logger: logger)
        }
        return secret
    }

    /// Ends `personID`'s calendar feed; false when they had none.
    public func revokeCalendarFeed(personID: Int64) async throws -> Bool {
        try await transaction { connection in
            try await connection.query("DELETE FROM calendar_feeds WHERE person_id = \(personID) RETURNING 1", logger: logger)
                .collect().count == 1
        }
    }

    /// Whose feed `secret` opens (nil: nobody's, or revoked, or they left).
    public func calendarPerson(secret: String) async throws -> Person? {
        guard let id = try await rows("SELECT teamwork_calendar_person(\(secret))")[0].decode(Int64?.self) else { return nil }
        return try await person(id: id)
    }

    /// What a person's feed shows: their work still to do from `from` on (at most `limit` tasks),
    /// and its sites.
    public func calendarWork(personID: Int64, from: Date, limit: Int) async throws -> (tasks: [FieldTask], sites: [Int64: Location]) {
        let tasks = try await listTasks(TaskFilter(assigneeID: personID, statuses: [.open, .assigned, .inProgress]))
            .filter { task in (task.plannedStart ?? task.window?.end ?? task.dueAt).map { $0 >= from } ?? false }
            .prefix(limit)
        let sites = try await locations(ids: Array(Set(tasks.compactMap(\.locationID))))
        return (Array(tasks), Dictionary(uniqueKeysWithValues: sites.map { ($0.id, $0) }))
    }
}
