import Foundation
import PostgresNIO
import TeamworkModel

/// The event listener's side of the master: worker changes in, exactly once.
extension CentralStore {
    /// Applies a batch of one replica's worker changes (in position order) and
    /// moves the cursor of `source` (the replica, or a retired file of it) to
    /// `cursor`, in one statement and so one transaction. A change already taken
    /// in (same person and change id) is skipped and returns no outcome.
    public func applyFieldChanges(
        replica: String, source: String? = nil, _ changes: [RecordedWorkerChange],
        cursor: ListenerCursor
    ) async throws -> [FieldChangeOutcome] {
        let json = String(decoding: try JSONEncoder().encode(changes), as: UTF8.self)
        do {
            return try await rows(
                """
                SELECT change_id, task_id, applied, conflict
                FROM teamwork_apply_field_changes(\(replica), \(source ?? replica), \(json)::jsonb, \(cursor.position), \(cursor.changeID))
                """
            ).map { row in
                let (id, task, applied, conflict) = try row.decode((String, Int64?, Bool, String?).self)
                return FieldChangeOutcome(changeID: id, taskID: task, applied: applied, conflict: conflict)
            }
        } catch {
            throw StoreError.map(error)
        }
    }

    /// Records one change the master could not take at all (the batch holding
    /// it failed, and so did the change alone) as an `invalid` conflict with
    /// `reason`, and moves the cursor of `source` past it, in one transaction:
    /// one bad change never holds back the rest of its replica.
    public func setAsideFieldChange(replica: String, source: String, _ change: RecordedWorkerChange, reason: String) async throws {
        let json = String(decoding: try JSONEncoder().encode(change), as: UTF8.self)
        do {
            _ = try await rows(
                """
                SELECT teamwork_set_aside_field_change(\(replica), \(source), \(json)::jsonb, \(reason), \(change.position), \(change.changeID))
                """)
        } catch {
            throw StoreError.map(error)
        }
    }

    /// How far the listener has read a replica or a retired file (the start when never).
    public func listenerCursor(source: String) async throws -> ListenerCursor {
        let rows = try await rows("SELECT position, change_id FROM listener_cursors WHERE source = \(source)")
        guard let row = rows.first else { return .start }
        let (position, changeID) = try row.decode((Int64, String?).self)
        return ListenerCursor(position: position, changeID: changeID)
    }

    /// Takes the session-level advisory lock that lets one listener at a time
    /// work on a replica (named by its cursor source, see
    /// `ReplicaDirectory.source(for:)`); false when another session holds it.
    /// The lock goes with the connection, so a crashed instance cannot keep it.
    public func tryLockReplica(_ source: String) async throws -> Bool {
        try await tryLock(Self.listenerLockClass, source)
    }

    public func unlockReplica(_ source: String) async throws {
        _ = try await rows("SELECT pg_advisory_unlock(\(Self.listenerLockClass), hashtext(\(source)))")
    }

    /// Takes the session-level advisory lock that makes this connection's
    /// process the one generator of the replica folder `folderID`; false when
    /// another session holds it. Held until ``unlockGenerator(folderID:)`` or
    /// until the connection ends (a killed instance lets the next one take over).
    public func tryLockGenerator(folderID: String) async throws -> Bool {
        try await tryLock(Self.generatorLockClass, folderID)
    }

    public func unlockGenerator(folderID: String) async throws {
        _ = try await rows("SELECT pg_advisory_unlock(\(Self.generatorLockClass), hashtext(\(folderID)))")
    }

    private func tryLock(_ lockClass: Int32, _ key: String) async throws -> Bool {
        let rows = try await rows("SELECT pg_try_advisory_lock(\(lockClass), hashtext(\(key)))")
        return try rows.first?.decode(Bool.self) ?? false
    }

    /// The first key of the listener's advisory locks (the second is the source's hash).
    static let listenerLockClass: Int32 = 7_310_152
    /// The first key of the generators' advisory locks (the second is the folder's hash).
    static let generatorLockClass: Int32 = 7_310_153

    static let conflictColumns = """
        f.id, f.conflict, f.applied, f.detail, f.replica, f.change_id, f.person_id,
        p.first_name || ' ' || p.last_name, f.task_id, t.title, f.operation, f.note, f.made_at, f.recorded_at,
        f.resolved_at, f.resolved_by, f.resolution
        """

    /// Conflicts, oldest first: the open ones, or all of them.
    public func conflicts(includeResolved: Bool = false, taskID: Int64? = nil) async throws -> [FieldConflict] {
        try await rows(
            """
            SELECT \(unescaped: Self.conflictColumns)
            FROM field_changes f LEFT JOIN people p ON p.id = f.person_id LEFT JOIN tasks t ON t.id = f.task_id
            WHERE f.conflict IS NOT NULL AND (\(includeResolved) OR f.resolved_at IS NULL)
              AND (\(taskID)::bigint IS NULL OR f.task_id = \(taskID))
            ORDER BY f.id
            """
        ).map(FieldConflict.init(row:))
    }

    /// Marks a conflict resolved by the acting manager, with an optional note.
    public func resolveConflict(id: Int64, resolution: String) async throws -> FieldConflict {
        try await transaction { connection in
            let updated = try await connection.query(
                """
                UPDATE field_changes SET resolved_at = now(), resolved_by = \(actorID), resolution = \(resolution)
                WHERE id = \(id) AND conflict IS NOT NULL AND resolved_at IS NULL RETURNING id
                """,
                logger: logger
            ).collect()
            if updated.isEmpty {
                let found = try await connection.query(
                    "SELECT conflict IS NOT NULL FROM field_changes WHERE id = \(id)", logger: logger
                ).collect()
                guard let row = found.first, try row.decode(Bool.self) else {
                    throw TeamworkError.notFound("no conflict with id \(id)")
                }
                throw TeamworkError.conflict("conflict \(id) is already resolved")
            }
            let rows = try await connection.query(
                """
                SELECT \(unescaped: Self.conflictColumns)
                FROM field_changes f LEFT JOIN people p ON p.id = f.person_id LEFT JOIN tasks t ON t.id = f.task_id
                WHERE f.id = \(id)
                """,
                logger: logger
            ).collect()
            return try FieldConflict(row: rows[0])
        }
    }
}

extension FieldConflict {
    init(row: PostgresRow) throws {
        let (
            id, rule, applied, detail, replica, changeID, personID, personName, taskID, title, operation, note, made, recorded,
            resolvedAt, resolvedBy, resolution
        ) = try row.decode(
            (
                Int64, String, Bool, String?, String, String, Int64, String?, Int64?, String?, String, String?, Date, Date,
                Date?, Int64?, String?
            ).self
        )
        self.init(
            id: id, rule: rule, applied: applied, detail: detail, replica: replica, changeID: changeID, personID: personID,
            personName: personName, taskID: taskID, taskTitle: title, operation: operation, note: note, madeAt: made,
            recordedAt: recorded, resolvedAt: resolvedAt, resolvedBy: resolvedBy, resolution: resolution)
    }
}
