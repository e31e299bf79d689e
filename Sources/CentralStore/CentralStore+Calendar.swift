import Foundation
import PostgresNIO
import TeamworkModel

extension CentralStore {
    /// Gives `personID` a calendar feed, replacing any they had; the secret is returned here and never again.
    public func issueCalendarFeed(personID: Int64) async throws -> String {
        _ = try await person(id: personID)
        // Signed with the service's link key (teamwork_issue_calendar_feed): a made-up feed address costs the service nothing.
        return try await transaction { connection in
            try await connection.query("SELECT teamwork_issue_calendar_feed(\(personID))", logger: logger).collect()[0]
                .decode(String.self)
        }
    }

    /// The keys public links are checked with, and whether unsigned links made before keys existed
    /// are still live (appointment links, calendar feeds): ``LinkKeys`` in the service.
    public func linkKeys() async throws -> (keys: [(id: Int, key: [UInt8])], legacyAppointments: Bool, legacyFeeds: Bool) {
        let rows = try await rows("SELECT id, key, legacy_appointments, legacy_feeds FROM teamwork_link_keys()")
        var keys: [(id: Int, key: [UInt8])] = []
        var legacy = (false, false)
        for row in rows {
            let (id, key, appointments, feeds) = try row.decode((Int32, ByteBuffer, Bool, Bool).self)
            keys.append((Int(id), Array(key.readableBytesView)))
            legacy = (appointments, feeds)
        }
        return (keys, legacy.0, legacy.1)
    }

    /// Makes a new link key when the newest is at least `every` old (the one before checks links for
    /// 31 days more); true when it did.
    @discardableResult
    public func rotateLinkKey(every: Duration) async throws -> Bool {
        try await rows("SELECT teamwork_rotate_link_key(make_interval(secs => \(Double(every.components.seconds))))")[0]
            .decode(Bool.self)
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
