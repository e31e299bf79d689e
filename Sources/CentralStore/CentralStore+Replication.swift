import Foundation
import PostgresNIO
import TeamworkModel

/// Reads of the master made for the replica generator: one consistent snapshot
/// for a full rebuild, and current rows by id for incremental catch-up.
extension CentralStore {
    /// A read-only REPEATABLE READ transaction: every read sees the same moment,
    /// and ``ReplicationSnapshot/feedPosition`` is the last change it includes.
    public func withReplicationSnapshot<R: Sendable>(_ body: (ReplicationSnapshot) async throws -> R) async throws -> R {
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
            let rows = try await connection.query("SELECT coalesce(max(position), 0) FROM change_feed", logger: logger).collect()
            let position = try rows[0].decode(Int64.self)
            return try await body(ReplicationSnapshot(connection: connection, logger: logger, feedPosition: position))
        }
    }

    /// The tasks with these ids as they are now, with their locations. Missing ids were deleted.
    public func currentTasks(ids: [Int64]) async throws -> [(task: FieldTask, location: Location?)] {
        guard !ids.isEmpty else { return [] }  // a catch-up batch often touches no such rows
        return try await rows(
            """
            SELECT \(unescaped: Columns.task), \(unescaped: Columns.location)
            FROM tasks k LEFT JOIN locations l ON l.id = k.location_id
            WHERE k.id = ANY(\(ids))
            """
        ).map(ReplicationSnapshot.taskWithLocation)
    }

    /// The ledger entries with these ids, as refusals to carry to the replica each came from.
    public func refusals(ids: [Int64]) async throws -> [FieldRefusal] {
        guard !ids.isEmpty else { return [] }  // a catch-up batch often touches no such rows
        return try await rows(
            """
            SELECT f.id, f.replica, f.person_id, f.change_id, f.task_id, f.operation, coalesce(f.conflict, 'invalid') AS rule,
                   coalesce(f.detail, 'the master did not take it') AS reason, f.recorded_at,
                   -- A dismissal's reason alone (written for the worker; a team's file holds it): never a manager's own note.
                   CASE WHEN f.resolved_at IS NOT NULL AND f.resolution LIKE 'dismissed: %' THEN f.resolution END AS decision
            FROM field_changes f WHERE f.id = ANY(\(ids)) ORDER BY f.id
            """
        ).map { row in
            let r = PostgresRandomAccessRow(row)
            return FieldRefusal(
                id: try r["id"].decode(Int64.self), replica: try r["replica"].decode(String.self),
                personID: try r["person_id"].decode(Int64.self), changeID: try r["change_id"].decode(String.self),
                taskID: try r["task_id"].decode(Int64?.self), operation: try r["operation"].decode(String.self),
                rule: try r["rule"].decode(String.self), reason: try r["reason"].decode(String.self),
                decidedAt: try r["recorded_at"].decode(Date.self), decision: try r["decision"].decode(String?.self))
        }
    }

    /// The people with these ids as they are now.
    public func people(ids: [Int64]) async throws -> [Person] {
        guard !ids.isEmpty else { return [] }  // a catch-up batch often touches no such rows
        return try await rows("SELECT \(unescaped: Columns.person) FROM people p WHERE p.id = ANY(\(ids))").map(Person.init(row:))
    }

    public func teams(ids: [Int64]) async throws -> [Team] {
        guard !ids.isEmpty else { return [] }  // a catch-up batch often touches no such rows
        return try await rows("SELECT \(unescaped: Columns.team) FROM teams t WHERE t.id = ANY(\(ids))").map(Team.init(row:))
    }

    public func locations(ids: [Int64]) async throws -> [Location] {
        guard !ids.isEmpty else { return [] }  // a catch-up batch often touches no such rows
        return try await rows("SELECT \(unescaped: Columns.location) FROM locations l WHERE l.id = ANY(\(ids))").map(Location.init(row:))
    }

    /// The parts with these ids as they are now (retired ones included: a device shows their name).
    public func parts(ids: [Int64]) async throws -> [Part] {
        guard !ids.isEmpty else { return [] }  // a catch-up batch often touches no such rows
        return try await rows("SELECT \(unescaped: Self.partColumns) FROM parts p WHERE p.id = ANY(\(ids))").map(Part.init(row:))
    }

    /// Team id to its members, for these teams.
    public func members(ofTeams ids: [Int64]) async throws -> [Int64: [Person]] {
        guard !ids.isEmpty else { return [:] }
        var result: [Int64: [Person]] = Dictionary(uniqueKeysWithValues: ids.map { ($0, []) })
        for row in try await rows(
            """
            SELECT \(unescaped: Columns.person), m.team_id FROM team_memberships m JOIN people p ON p.id = m.person_id
            WHERE m.team_id = ANY(\(ids)) ORDER BY p.id
            """
        ) {
            result[try PostgresRandomAccessRow(row)["team_id"].decode(Int64.self), default: []].append(try Person(row: row))
        }
        return result
    }

    /// Person id to the teams they belong to, for these people.
    public func teamIDs(ofPeople ids: [Int64]) async throws -> [Int64: Set<Int64>] {
        guard !ids.isEmpty else { return [:] }
        var result: [Int64: Set<Int64>] = Dictionary(uniqueKeysWithValues: ids.map { ($0, []) })
        for row in try await rows("SELECT person_id, team_id FROM team_memberships WHERE person_id = ANY(\(ids))") {
            let (person, team) = try row.decode((Int64, Int64).self)
            result[person, default: []].insert(team)
        }
        return result
    }

    /// The replicas that hold a task at one of these locations: (team, assignee) pairs.
    public func taskOwners(atLocations ids: [Int64]) async throws -> [(teamID: Int64?, assigneeID: Int64?)] {
        try await rows("SELECT DISTINCT team_id, assignee_id FROM tasks WHERE location_id = ANY(\(ids))").map {
            try $0.decode((Int64?, Int64?).self)
        }
    }
}

/// One consistent view of the master for a full rebuild.
public struct ReplicationSnapshot: Sendable {
    let connection: PostgresConnection
    let logger: Logger
    /// The last feed position the snapshot includes.
    public let feedPosition: Int64

    public func teams() async throws -> [Team] {
        try await connection.query("SELECT \(unescaped: Columns.team) FROM teams t ORDER BY t.id", logger: logger)
            .collect().map(Team.init(row:))
    }

    public func people() async throws -> [Person] {
        try await connection.query("SELECT \(unescaped: Columns.person) FROM people p ORDER BY p.id", logger: logger)
            .collect().map(Person.init(row:))
    }

    /// The catalogue, retired parts included (in the common replica, marked retired).
    public func parts() async throws -> [Part] {
        try await connection.query("SELECT \(unescaped: CentralStore.partColumns) FROM parts p ORDER BY p.id", logger: logger)
            .collect().map(Part.init(row:))
    }

    /// (team, person) pairs, ordered by team.
    public func memberships() async throws -> [(teamID: Int64, personID: Int64)] {
        try await connection.query("SELECT team_id, person_id FROM team_memberships ORDER BY team_id, person_id", logger: logger)
            .collect().map { try $0.decode((Int64, Int64).self) }
    }

    /// The two reads every replica-by-replica pass goes through, straight from indexes: team tasks
    /// by team, then personal tasks by assignee, each in id order.
    static let replicaOrder: [(filter: String, key: String)] = [
        ("k.team_id IS NOT NULL", "k.team_id"), ("k.team_id IS NULL", "k.assignee_id"),
    ]

    /// Rows per batch of a snapshot read.
    static let batchRows = 10_000

    /// Reads `columns` of `from` in `(key, id)` order, in batches of ``batchRows`` each drained
    /// whole before its rows are handed to `body`: no row stream waits for its reader while the
    /// caller works (postgres-nio traps when PostgreSQL closes a connection under such a stream,
    /// as a failover does), and memory stays at a batch whatever the table's size. The snapshot's
    /// transaction keeps every batch at the same moment.
    private func inBatches(
        _ columns: String, from table: String, where filter: String, key: String, id: String,
        _ body: (PostgresRow) async throws -> Void
    ) async throws {
        var after: (key: Int64, id: Int64) = (.min, .min)
        while true {
            let rows = try await connection.query(
                """
                SELECT \(unescaped: columns), \(unescaped: key) AS batch_key, \(unescaped: id) AS batch_id FROM \(unescaped: table)
                WHERE \(unescaped: filter) AND (\(unescaped: key), \(unescaped: id)) > (\(after.key), \(after.id))
                ORDER BY \(unescaped: key), \(unescaped: id) LIMIT \(Self.batchRows)
                """,
                logger: logger
            ).collect()
            for row in rows { try await body(row) }
            guard rows.count == Self.batchRows, let last = rows.last?.makeRandomAccess() else { return }
            after = (try last["batch_key"].decode(Int64.self), try last["batch_id"].decode(Int64.self))
        }
    }

    /// Every task, grouped by replica (see ``replicaOrder``), a batch at a time.
    public func forEachTask(_ body: (FieldTask) async throws -> Void) async throws {
        for (filter, key) in Self.replicaOrder {
            try await inBatches(Columns.task, from: "tasks k", where: filter, key: key, id: "k.id") {
                try await body(try FieldTask(row: $0))
            }
        }
    }

    /// The columns of ``forEachTaskRow(_:)``: those ``TaskSchema/travelling`` declares, in its order
    /// (the order a replica's `tasks` upsert binds them).
    public static let replicaRowColumns = TaskSchema.travelling.map(\.master).joined(separator: ", ")

    /// The full rebuild's fast path: the same rows as ``forEachTask(_:)``,
    /// each row's first cell one binary record of ``replicaRowColumns``, so
    /// it can be copied into SQLite without building Swift values for every field.
    /// No locations: joining them costs PostgreSQL as much again as the tasks
    /// alone, and the rebuild copies them from the common replica instead.
    public func forEachTaskRow(_ body: (PostgresRow) async throws -> Void) async throws {
        // Straight from the indexes, on this backend alone: left to itself the planner may sort
        // on disk with parallel workers and JIT, which costs several times the CPU.
        try await connection.query(
            """
            SELECT set_config('enable_sort', 'off', true), set_config('jit', 'off', true),
                   set_config('max_parallel_workers_per_gather', '0', true)
            """,
            logger: logger
        )
        for (filter, key) in Self.replicaOrder {
            try await inBatches("ROW(\(Self.replicaRowColumns))", from: "tasks k", where: filter, key: key, id: "k.id", body)
        }
    }

    /// Every location (sites and people's positions), in id order, a batch at a time.
    public func forEachLocation(_ body: (Location) async throws -> Void) async throws {
        try await inBatches(Columns.location, from: "locations l", where: "true", key: "l.id", id: "l.id") {
            try await body(try Location(row: $0))
        }
    }

    static func taskWithLocation(_ row: PostgresRow) throws -> (task: FieldTask, location: Location?) {
        let r = PostgresRandomAccessRow(row)
        return (try FieldTask(r), try Location.ifPresent(r))
    }
}

extension CentralStore {
    /// A team's tasks as they are now, with their locations.
    public func currentTasks(forTeam teamID: Int64) async throws -> [(task: FieldTask, location: Location?)] {
        try await rows(
            """
            SELECT \(unescaped: Columns.task), \(unescaped: Columns.location)
            FROM tasks k LEFT JOIN locations l ON l.id = k.location_id WHERE k.team_id = \(teamID) ORDER BY k.id
            """
        ).map(ReplicationSnapshot.taskWithLocation)
    }

    /// A person's tasks that have no team, as they are now, with their locations.
    public func currentPersonalTasks(of personID: Int64) async throws -> [(task: FieldTask, location: Location?)] {
        try await rows(
            """
            SELECT \(unescaped: Columns.task), \(unescaped: Columns.location)
            FROM tasks k LEFT JOIN locations l ON l.id = k.location_id
            WHERE k.team_id IS NULL AND k.assignee_id = \(personID) ORDER BY k.id
            """
        ).map(ReplicationSnapshot.taskWithLocation)
    }
}
