import Foundation
import PostgresNIO
import TeamworkModel

extension CentralStore {
    /// Creates a task. As for ``assignTask(id:to:expectedVersion:force:)``, an
    /// assignee without a required skill is refused unless `force`.
    public func createTask(_ new: NewTask, force: Bool = false) async throws -> FieldTask {
        let forced = try await forcedReason(required: new.requiredSkills, assigneeID: new.assignment.assigneeID, force: force)
        return try await transaction { connection in
            if !forced.isEmpty { _ = try await connection.query("SELECT teamwork_mark('forced', \(forced))", logger: logger).collect() }
            return try await insertTask(new, on: connection)
        }
    }

    /// What the history records when a manager overrides the skills rule: the
    /// skills the assignee lacks. Empty when there is nothing to override.
    private func forcedReason(required: [String], assigneeID: Int64?, force: Bool) async throws -> String {
        guard force, let assigneeID, !required.isEmpty else { return "" }
        let missing = Skills.missing(required, from: try await person(id: assigneeID).skills)
        return missing.isEmpty ? "" : "assigned without \(missing.joined(separator: ", "))"
    }

    func insertTask(_ new: NewTask, on connection: PostgresConnection) async throws -> FieldTask {
        let checklist = try await new.checklist.asyncMap { try await latestChecklistVersion(named: $0, on: connection) }
        let rows = try await connection.query(
            """
            INSERT INTO tasks AS k (title, description, priority, team_id, assignee_id, location_id, due_at, created_by,
                                    required_skills, window_start, window_end, checklist_id, checklist_version,
                                    duration_minutes, customer_id\(declaredColumns: new.declared))
            VALUES (\(new.title), \(new.description), \(new.priority.rawValue), \(new.assignment.teamID),
                    \(new.assignment.assigneeID), \(new.locationID), \(new.dueAt), \(actorID),
                    \(new.requiredSkills), \(new.window?.start), \(new.window?.end), \(checklist?.id), \(checklist?.version),
                    \(new.durationMinutes), \(new.customerID)\(declaredValues: new.declared))
            RETURNING \(unescaped: Columns.task)
            """,
            logger: logger
        ).collect()
        return try FieldTask(row: rows[0])
    }

    /// Tasks matching `filter`, sorted by due date (undated last), then priority
    /// (urgent first), then id.
    public func listTasks(_ filter: TaskFilter = TaskFilter()) async throws -> [FieldTask] {
        let statuses = filter.statuses.map(\.rawValue)
        let day = filter.on?.description
        let priorities = filter.priorities.map(\.rawValue)
        let search = filter.search.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.flatMap { $0.isEmpty ? nil : $0 }
        if let search, search.count > TaskFilter.maximumSearchLength {
            throw TeamworkError.invalid("a search has at most \(TaskFilter.maximumSearchLength) characters")
        }
        let pattern = search.map(Self.containing)
        return try await rows(
            """
            SELECT \(unescaped: Columns.task) FROM tasks k
            WHERE (\(filter.teamID)::bigint IS NULL OR k.team_id = \(filter.teamID))
              AND (\(filter.assigneeID)::bigint IS NULL OR k.assignee_id = \(filter.assigneeID))
              AND (cardinality(\(statuses)::text[]) = 0 OR k.status = ANY(\(statuses)))
              AND (cardinality(\(priorities)::text[]) = 0 OR k.priority = ANY(\(priorities)))
              AND (\(pattern)::text IS NULL OR k.id::text = \(search)
                   OR k.title ILIKE \(pattern) OR k.description ILIKE \(pattern)
                   OR EXISTS (SELECT 1 FROM locations l WHERE l.id = k.location_id
                                AND concat_ws(' ', l.name, l.street, l.city, l.postal_code, l.region) ILIKE \(pattern))
                   OR EXISTS (SELECT 1 FROM people p WHERE p.id = k.assignee_id
                                AND concat_ws(' ', p.first_name, p.last_name) ILIKE \(pattern)))
              AND (\(filter.skill)::text IS NULL OR \(filter.skill) = ANY(k.required_skills))
              AND (\(filter.dueBefore)::timestamptz IS NULL OR k.due_at < \(filter.dueBefore))
              AND (\(filter.dueAfter)::timestamptz IS NULL OR k.due_at > \(filter.dueAfter))
              AND (\(filter.overdueAt)::timestamptz IS NULL
                   OR (teamwork_late_from(k.due_at, k.window_end) < \(filter.overdueAt) AND k.status NOT IN ('completed', 'cancelled')))
              AND (\(day)::date IS NULL
                   OR (k.window_start IS NOT NULL AND k.window_start < ((\(day)::date + 1)::timestamp AT TIME ZONE k.time_zone)
                       AND k.window_end > (\(day)::date::timestamp AT TIME ZONE k.time_zone))
                   OR (k.window_start IS NULL AND k.due_at >= (\(day)::date::timestamp AT TIME ZONE k.time_zone)
                       AND k.due_at < ((\(day)::date + 1)::timestamp AT TIME ZONE k.time_zone)))
            ORDER BY coalesce(k.window_start, k.due_at) ASC NULLS LAST, k.due_at ASC NULLS LAST,
                     CASE k.priority WHEN 'urgent' THEN 0 WHEN 'high' THEN 1 WHEN 'normal' THEN 2 ELSE 3 END,
                     k.id
            LIMIT \(filter.limit ?? Int.max)
            """
        ).map(FieldTask.init(row:))
    }

    /// The zone a task with this location, team and assignee has (sql/functions/tasks_time_zone.sql).
    public func timeZone(location: Int64?, team: Int64?, assignee: Int64?) async throws -> Zone {
        let name = try await rows("SELECT teamwork_task_time_zone(\(location), \(team), \(assignee))")[0].decode(String.self)
        return Zone.reading(name)
    }

    /// The tasks with these ids that exist, in one round trip (a deleted one is simply absent).
    public func tasks(ids: [Int64]) async throws -> [Int64: FieldTask] {
        guard !ids.isEmpty else { return [:] }
        let found = try await rows("SELECT \(unescaped: Columns.task) FROM tasks k WHERE k.id = ANY(\(ids))").map(FieldTask.init(row:))
        return Dictionary(uniqueKeysWithValues: found.map { ($0.id, $0) })
    }

    public func task(id: Int64) async throws -> FieldTask {
        let found = try await rows("SELECT \(unescaped: Columns.task) FROM tasks k WHERE k.id = \(id)")
        guard let row = found.first else { throw TeamworkError.notFound("no task with id \(id)") }
        return try FieldTask(row: row)
    }

    /// Applies manager edits. With `expectedVersion`, the edit is refused with a
    /// conflict when someone else changed the task since that version was read.
    public func updateTask(id: Int64, _ changes: TaskChanges, expectedVersion: Int? = nil) async throws -> FieldTask {
        let setLocation = changes.locationID != nil
        let location = changes.locationID ?? nil
        let setDue = changes.dueAt != nil
        let due = changes.dueAt ?? nil
        let setWindow = changes.window != nil
        let window = changes.window ?? nil
        let setChecklist = changes.checklist != nil
        if let wanted = changes.checklist {
            // A completed task's answers are its proof of work: they stay with the checklist they answer.
            let current = try await task(id: id)
            if current.status == .completed, current.checklist?.name != wanted {
                throw TeamworkError.conflict(
                    "task \(id) is completed: its checklist and answers are its proof of work; reopen it to change the checklist")
            }
        }
        return try await guardedUpdate(id: id, expectedVersion: expectedVersion) { connection, version in
            let checklist = try await (changes.checklist ?? nil).asyncMap {
                try await self.latestChecklistVersion(named: $0, on: connection)
            }
            return try await connection.query(
                """
                UPDATE tasks AS k SET
                    title = coalesce(\(changes.title), title),
                    description = coalesce(\(changes.description), description),
                    priority = coalesce(\(changes.priority?.rawValue), priority),
                    location_id = CASE WHEN \(setLocation) THEN \(location) ELSE location_id END,
                    due_at = CASE WHEN \(setDue) THEN \(due) ELSE due_at END,
                    required_skills = coalesce(\(changes.requiredSkills)::text[], required_skills),
                    window_start = CASE WHEN \(setWindow) THEN \(window?.start) ELSE window_start END,
                    window_end = CASE WHEN \(setWindow) THEN \(window?.end) ELSE window_end END,
                    -- Another checklist (or none) starts the answers anew; the same one keeps its version and answers.
                    answers = CASE WHEN \(setChecklist) AND k.checklist_id IS DISTINCT FROM \(checklist?.id)
                                   THEN '{}'::jsonb ELSE answers END,
                    checklist_version = CASE WHEN NOT \(setChecklist) OR k.checklist_id IS NOT DISTINCT FROM \(checklist?.id)
                                             THEN checklist_version ELSE \(checklist?.version) END,
                    checklist_id = CASE WHEN \(setChecklist) THEN \(checklist?.id) ELSE checklist_id END,
                    duration_minutes = CASE WHEN \(changes.durationMinutes != nil) THEN \(changes.durationMinutes ?? nil)
                                            ELSE duration_minutes END,
                    pinned = coalesce(\(changes.pinned), pinned),
                    customer_id = CASE WHEN \(changes.customerID != nil) THEN \(changes.customerID ?? nil) ELSE customer_id END
                    \(declaredSets: changes.declared)
                WHERE k.id = \(id) AND (\(version)::integer IS NULL OR k.version = \(version))
                RETURNING \(unescaped: Columns.task)
                """,
                logger: logger
            ).collect()
        }
    }

    /// Gives a task to a team, a member of a team, or a person. A new assignee
    /// starts from scratch: the task is no longer in progress. A person who
    /// lacks a skill the task requires is refused (by the database) unless
    /// `force`; then the history entry says who was given it without what.
    public func assignTask(
        id: Int64, to assignment: Assignment, expectedVersion: Int? = nil, force: Bool = false
    ) async throws -> FieldTask {
        let current = try await task(id: id)
        if current.status.isClosed {
            throw TeamworkError.conflict("task \(id) is \(current.status.rawValue); reopen it before assigning it")
        }
        let forced = try await forcedReason(required: current.requiredSkills, assigneeID: assignment.assigneeID, force: force)
        return try await guardedUpdate(id: id, expectedVersion: expectedVersion) { connection, version in
            if !forced.isEmpty { _ = try await connection.query("SELECT teamwork_mark('forced', \(forced))", logger: logger).collect() }
            return try await connection.query(
                """
                UPDATE tasks AS k SET
                    team_id = \(assignment.teamID),
                    assignee_id = \(assignment.assigneeID),
                    status = CASE WHEN k.assignee_id IS DISTINCT FROM \(assignment.assigneeID) THEN 'open' ELSE k.status END,
                    started_at = CASE WHEN k.assignee_id IS DISTINCT FROM \(assignment.assigneeID) THEN NULL ELSE k.started_at END
                WHERE k.id = \(id) AND k.status NOT IN ('completed', 'cancelled')
                  AND (\(version)::integer IS NULL OR k.version = \(version))
                RETURNING \(unescaped: Columns.task)
                """,
                logger: logger
            ).collect()
        }
    }

    /// Cancels a task that is not completed.
    public func cancelTask(id: Int64, expectedVersion: Int? = nil) async throws -> FieldTask {
        let current = try await task(id: id)
        if current.status.isClosed {
            throw TeamworkError.conflict("task \(id) is already \(current.status.rawValue)")
        }
        return try await guardedUpdate(id: id, expectedVersion: expectedVersion) { connection, version in
            try await connection.query(
                """
                UPDATE tasks AS k SET status = 'cancelled'
                WHERE k.id = \(id) AND k.status NOT IN ('completed', 'cancelled')
                  AND (\(version)::integer IS NULL OR k.version = \(version))
                RETURNING \(unescaped: Columns.task)
                """,
                logger: logger
            ).collect()
        }
    }

    /// Puts a completed or cancelled task back to work, clearing what the field recorded.
    public func reopenTask(id: Int64, expectedVersion: Int? = nil) async throws -> FieldTask {
        let current = try await task(id: id)
        if !current.status.isClosed {
            throw TeamworkError.conflict("task \(id) is \(current.status.rawValue), not completed or cancelled")
        }
        return try await guardedUpdate(id: id, expectedVersion: expectedVersion) { connection, version in
            try await connection.query(
                """
                UPDATE tasks AS k SET status = 'open', started_at = NULL, completed_at = NULL,
                    completed_by = NULL, completion_note = NULL
                WHERE k.id = \(id) AND k.status IN ('completed', 'cancelled')
                  AND (\(version)::integer IS NULL OR k.version = \(version))
                RETURNING \(unescaped: Columns.task)
                """,
                logger: logger
            ).collect()
        }
    }

    public func deleteTask(id: Int64, expectedVersion: Int? = nil) async throws {
        // A visit booked with a customer is cancelled first, so they are told (the message is made from the task).
        let booked = try await rows(
            """
            SELECT 1 FROM tasks k JOIN appointments a ON a.task_id = k.id LEFT JOIN locations l ON l.id = k.location_id
            WHERE k.id = \(id) AND k.status IN ('open', 'assigned', 'in_progress') AND k.window_start IS NOT NULL
              AND coalesce(k.customer_id, l.customer_id) = a.customer_id
            """)
        if !booked.isEmpty {
            throw TeamworkError.conflict(
                "task \(id) has a visit booked with its customer: cancel it first (`task cancel \(id)`; they are told), then delete it")
        }
        _ = try await guardedUpdate(id: id, expectedVersion: expectedVersion) { connection, version in
            try await connection.query(
                """
                DELETE FROM tasks AS k WHERE k.id = \(id) AND (\(version)::integer IS NULL OR k.version = \(version))
                RETURNING \(unescaped: Columns.task)
                """,
                logger: logger
            ).collect()
        }
    }

    /// Runs a statement guarded by the version check and explains an empty result:
    /// the task does not exist, or someone changed it since `expectedVersion`, or
    /// it changed state between our read and our write.
    private func guardedUpdate(
        id: Int64, expectedVersion: Int?,
        _ statement: @Sendable (PostgresConnection, Int?) async throws -> [PostgresRow]
    ) async throws -> FieldTask {
        let rows = try await transaction { connection in
            try await statement(connection, expectedVersion)
        }
        if let row = rows.first { return try FieldTask(row: row) }
        let current = try await task(id: id)
        if let expectedVersion, current.version != expectedVersion {
            throw TeamworkError.conflict(
                "task \(id) was changed by someone else (you have version \(expectedVersion), it is now at version \(current.version)); "
                    + "run `task show \(id)` and try again"
            )
        }
        throw TeamworkError.conflict("task \(id) changed while this was being applied; try again")
    }

    /// Every recorded change to a task, oldest first; kept after the task is deleted.
    public func history(taskID: Int64) async throws -> [TaskHistoryEntry] {
        let rows = try await rows(
            """
            SELECT h.id, h.action, h.actor_id, h.db_user, h.changed_at, h.field_change_id, c.key, c.value ->> 'old', c.value ->> 'new'
            FROM task_history h LEFT JOIN LATERAL jsonb_each(h.changes) c ON true
            WHERE h.task_id = \(taskID)
            ORDER BY h.id, c.key
            """
        )
        var entries: [TaskHistoryEntry] = []
        for row in rows {
            let (id, action, actor, user, at, fieldChange, key, old, new) = try row.decode(
                (Int64, String, Int64?, String, Date, String?, String?, String?, String?).self
            )
            if entries.last?.id != id {
                entries.append(
                    TaskHistoryEntry(
                        id: id, taskID: taskID, action: action, actorID: actor, databaseUser: user, changedAt: at, changes: [:],
                        fieldChangeID: fieldChange
                    ))
            }
            if let key { entries[entries.count - 1].changes[key] = FieldChange(old: old, new: new) }
        }
        if entries.isEmpty { throw TeamworkError.notFound("no task with id \(taskID) and no history for it") }
        return entries
    }

    /// Feed positions after `position`, in order.
    public func feed(after position: Int64 = 0, limit: Int = 1000) async throws -> [FeedEntry] {
        try await rows(
            """
            SELECT position, entity, entity_id, operation, team_id, old_team_id, assignee_id, old_assignee_id, changed_at
            FROM change_feed WHERE position > \(position) ORDER BY position LIMIT \(limit)
            """
        ).map { row in
            let (p, entity, entityID, op, team, oldTeam, assignee, oldAssignee, at) = try row.decode(
                (Int64, String, Int64, String, Int64?, Int64?, Int64?, Int64?, Date).self
            )
            return FeedEntry(
                position: p, entity: entity, entityID: entityID, operation: op, teamID: team, oldTeamID: oldTeam,
                assigneeID: assignee, oldAssigneeID: oldAssignee, changedAt: at
            )
        }
    }
}

extension PostgresQuery.StringInterpolation {
    /// `, name, …`: the columns a manager set by name (``DeclaredValues``), for an INSERT's column list. The names
    /// are the declaration's own (TaskSchema), never a caller's text.
    mutating func appendInterpolation(declaredColumns declared: DeclaredValues) {
        for (column, _) in declared.ordered { appendLiteral(", \(column.name)") }
    }

    /// `, $n, …`: their values, bound, in the same order.
    mutating func appendInterpolation(declaredValues declared: DeclaredValues) {
        for (_, value) in declared.ordered {
            appendLiteral(", ")
            append(value)
        }
    }

    /// `, name = $n, …`: for an UPDATE's SET list.
    mutating func appendInterpolation(declaredSets declared: DeclaredValues) {
        for (column, value) in declared.ordered {
            appendLiteral(", \(column.name) = ")
            append(value)
        }
    }

    private mutating func append(_ value: TaskValue) {
        switch value {
        case .text(let text): appendInterpolation(text)
        case .integer(let number): appendInterpolation(number)
        case .date(let date): appendInterpolation(date)
        case .bool(let flag): appendInterpolation(flag)
        case .null: appendLiteral("NULL")
        }
    }
}
