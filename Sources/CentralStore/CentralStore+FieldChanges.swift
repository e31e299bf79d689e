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

    /// Which of `changeIDs` made by `personID` the master's ledger holds (applied, decided by a
    /// rule or set aside): those a device sent again may stop being kept. One indexed statement
    /// (the ledger's key is the person and the change id).
    public func settledChanges(of personID: Int64, among changeIDs: [String]) async throws -> Set<String> {
        guard !changeIDs.isEmpty else { return [] }
        return Set(
            try await rows(
                """
                SELECT change_id FROM field_changes WHERE person_id = \(personID) AND change_id = ANY(\(changeIDs))
                """
            ).map { try $0.decode(String.self) })
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
        f.id AS conflict_id, f.conflict AS conflict_rule, f.applied AS conflict_applied, f.detail AS conflict_detail,
        f.replica AS conflict_replica, f.change_id AS conflict_change_id, f.person_id AS conflict_person_id,
        p.first_name || ' ' || p.last_name AS conflict_person_name, f.task_id AS conflict_task_id, t.title AS conflict_task_title,
        f.operation AS conflict_operation, f.note AS conflict_note, f.made_at AS conflict_made_at,
        f.recorded_at AS conflict_recorded_at, f.resolved_at AS conflict_resolved_at, f.resolved_by AS conflict_resolved_by,
        f.resolution AS conflict_resolution
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

    /// Open conflicts per task, with the oldest one's id (tasks with none are absent): what the board marks on cards.
    public func openConflictsByTask() async throws -> [Int64: (count: Int, first: Int64)] {
        var counts: [Int64: (count: Int, first: Int64)] = [:]
        for row in try await rows(
            """
            SELECT task_id, count(*)::int AS open, min(id) AS first FROM field_changes
            WHERE conflict IS NOT NULL AND resolved_at IS NULL AND task_id IS NOT NULL GROUP BY task_id
            """)
        {
            let r = PostgresRandomAccessRow(row)
            counts[try r["task_id"].decode(Int64.self)] = (try r["open"].decode(Int.self), try r["first"].decode(Int64.self))
        }
        return counts
    }

    /// Accepts a completion the master set aside as the worker's work, as the acting manager (a use or a
    /// time entry: ``acceptEntry(conflict:operation:person:name:taskID:item:value:note:connection:)``): the
    /// task becomes completed by that worker (and theirs), at the time and with the note they gave,
    /// and this conflict and the worker's other open start and completion conflicts of the task are
    /// decided. The history names the manager. Refused (nothing changed) when the conflict is not an
    /// open completion, the task is gone, completed or cancelled, or the worker may not hold it.
    public func acceptConflict(id: Int64) async throws -> (conflict: FieldConflict, task: FieldTask) {
        try await transaction { connection in
            let found = try await connection.query(
                """
                SELECT f.task_id, f.person_id, f.operation, f.applied, f.resolved_at IS NOT NULL AS decided,
                       t.status, p.first_name || ' ' || p.last_name AS name, f.item, f.value, f.note
                FROM field_changes f LEFT JOIN tasks t ON t.id = f.task_id LEFT JOIN people p ON p.id = f.person_id
                WHERE f.id = \(id) AND f.conflict IS NOT NULL
                FOR UPDATE OF f
                """, logger: logger
            ).collect()
            guard let row = found.first else { throw TeamworkError.notFound("no conflict with id \(id)") }
            let r = PostgresRandomAccessRow(row)
            let (person, name) = (try r["person_id"].decode(Int64.self), try r["name"].decode(String?.self) ?? "the worker")
            guard try !r["decided"].decode(Bool.self) else { throw TeamworkError.conflict("conflict \(id) is already decided") }
            let operation = try r["operation"].decode(String.self)
            if ["use", "time"].contains(operation), !(try r["applied"].decode(Bool.self)) {
                return try await acceptEntry(
                    conflict: id, operation: operation, person: person, name: name, taskID: try r["task_id"].decode(Int64?.self),
                    item: try r["item"].decode(String?.self), value: try r["value"].decode(String?.self),
                    note: try r["note"].decode(String?.self), connection: connection)
            }
            guard operation == "complete" else {
                throw TeamworkError.invalid(
                    "conflict \(id) is not a completion, a use or a time entry: dismiss it, or give the task to someone")
            }
            guard let taskID = try r["task_id"].decode(Int64?.self), let status = try r["status"].decode(String?.self) else {
                throw TeamworkError.invalid("the task of conflict \(id) is gone: dismiss it")
            }
            let applied = try r["applied"].decode(Bool.self)
            if !applied {
                guard status != TaskStatus.completed.rawValue else {
                    throw TeamworkError.conflict("task \(taskID) is already completed: dismiss conflict \(id), or reopen the task first")
                }
                guard status != TaskStatus.cancelled.rawValue else {
                    throw TeamworkError.conflict("task \(taskID) was cancelled: reopen it first, then accept")
                }
                try await connection.query(
                    """
                    UPDATE tasks t SET status = 'completed', assignee_id = f.person_id, completed_by = f.person_id,
                           completed_at = least(f.made_at, now()), started_at = coalesce(t.started_at, least(f.made_at, now())),
                           completion_note = coalesce(f.note, '')
                    FROM field_changes f WHERE f.id = \(id) AND t.id = f.task_id
                    """, logger: logger)
            }
            let resolution = "accepted as done by \(name)"
            try await connection.query(
                """
                UPDATE field_changes SET resolved_at = now(), resolved_by = \(actorID),
                       resolution = CASE WHEN id = \(id) THEN \(resolution) ELSE \("settled by accepting conflict \(id)") END
                WHERE (id = \(id) OR (task_id = \(taskID) AND person_id = \(person) AND operation IN ('start', 'complete')))
                  AND conflict IS NOT NULL AND resolved_at IS NULL
                """, logger: logger)
            return try await decided(id, taskID: taskID, connection)
        }
    }

    /// Accepts what was used or a time entry the master set aside (a task that moved, a late line, a
    /// part since retired) as the worker gave it: the manager's correction (`teamwork_correct_material`,
    /// `teamwork_correct_time`: the history names the manager, a completed task's costs go to billing
    /// again) in the same transaction as the decision. Refused with the function's reason, nothing changed.
    func acceptEntry(
        conflict id: Int64, operation: String, person: Int64, name: String, taskID: Int64?, item: String?, value: String?,
        note: String?, connection: PostgresConnection
    ) async throws -> (conflict: FieldConflict, task: FieldTask) {
        guard let taskID else { throw TeamworkError.invalid("the task of conflict \(id) is gone: dismiss it") }
        // Collected: an error the function raises comes with its rows.
        if operation == "use" {
            _ = try await connection.query(
                "SELECT teamwork_correct_material(\(taskID), \(person), \(item), \(item == nil ? note : nil), \(value))",
                logger: logger
            ).collect()
        } else {
            _ = try await connection.query(
                "SELECT teamwork_correct_time(\(taskID), \(person), \(item), \(value))", logger: logger
            ).collect()
        }
        let resolution = "accepted as \(name) recorded it"
        try await connection.query(
            """
            UPDATE field_changes SET resolved_at = now(), resolved_by = \(actorID), resolution = \(resolution)
            WHERE id = \(id) AND conflict IS NOT NULL AND resolved_at IS NULL
            """, logger: logger)
        return try await decided(id, taskID: taskID, connection)
    }

    /// Conflict `id` and task `taskID` as a decision left them, read in its transaction.
    func decided(
        _ id: Int64, taskID: Int64, _ connection: PostgresConnection
    ) async throws -> (
        conflict: FieldConflict, task: FieldTask
    ) {
        let conflict = try await connection.query(
            """
            SELECT \(unescaped: Self.conflictColumns)
            FROM field_changes f LEFT JOIN people p ON p.id = f.person_id LEFT JOIN tasks t ON t.id = f.task_id
            WHERE f.id = \(id)
            """, logger: logger
        ).collect()
        let task = try await connection.query(
            "SELECT \(unescaped: Columns.task) FROM tasks k WHERE k.id = \(taskID)", logger: logger
        ).collect()
        return (try FieldConflict(row: conflict[0]), try FieldTask(row: task[0]))
    }

    /// Sets aside what the worker did, as the acting manager, saying why (1 to 500 characters):
    /// the conflict is decided as `dismissed: REASON`, and the decision reaches the worker's device
    /// beside the refusal they already read (sql/0031).
    public func dismissConflict(id: Int64, reason: String) async throws -> FieldConflict {
        let reason = reason.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !reason.isEmpty else { throw TeamworkError.invalid("say why you dismiss it: nothing was changed") }
        guard reason.count <= 500 else { throw TeamworkError.invalid("a reason has at most 500 characters") }
        return try await resolveConflict(id: id, resolution: "dismissed: " + reason)
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
    /// The columns of ``CentralStore/conflictColumns``, wherever they stand in `row`.
    init(row: PostgresRow) throws {
        let r = PostgresRandomAccessRow(row)
        self.init(
            id: try r["conflict_id"].decode(Int64.self), rule: try r["conflict_rule"].decode(String.self),
            applied: try r["conflict_applied"].decode(Bool.self), detail: try r["conflict_detail"].decode(String?.self),
            replica: try r["conflict_replica"].decode(String.self), changeID: try r["conflict_change_id"].decode(String.self),
            personID: try r["conflict_person_id"].decode(Int64.self), personName: try r["conflict_person_name"].decode(String?.self),
            taskID: try r["conflict_task_id"].decode(Int64?.self), taskTitle: try r["conflict_task_title"].decode(String?.self),
            operation: try r["conflict_operation"].decode(String.self), note: try r["conflict_note"].decode(String?.self),
            madeAt: try r["conflict_made_at"].decode(Date.self), recordedAt: try r["conflict_recorded_at"].decode(Date.self),
            resolvedAt: try r["conflict_resolved_at"].decode(Date?.self), resolvedBy: try r["conflict_resolved_by"].decode(Int64?.self),
            resolution: try r["conflict_resolution"].decode(String?.self))
    }
}
