import Foundation
import GRDB
import SyncProtocol
import TeamworkModel

/// A task as the device holds it.
public struct LocalTask: Sendable, Codable, Equatable {
    public var replica: String
    public var id: Int64
    public var title: String
    public var description: String
    public var priority: String
    public var teamID: Int64?
    public var assigneeID: Int64?
    public var dueAt: Date?
    public var status: String
    public var startedAt: Date?
    public var completedAt: Date?
    public var completedBy: Int64?
    public var completionNote: String?
    public var location: String?
    /// The appointment window, when the customer expects you.
    public var window: TimeWindow?
    /// Skills the task requires.
    public var requiredSkills: [String]

    /// What the shared rules need to know of it (see `WorkerChange.rejection`).
    public var facts: TaskFacts { TaskFacts(assigneeID: assigneeID, status: status, completedBy: completedBy) }

    public var isClosed: Bool { status == "completed" || status == "cancelled" }

    public func isOverdue(at now: Date) -> Bool {
        guard let dueAt, !isClosed else { return false }
        return dueAt < now
    }

    /// Its window ended before `now` and it still needs work.
    public func isPastWindow(at now: Date) -> Bool {
        guard let window, !isClosed else { return false }
        return window.end < now
    }

    /// Overdue or past its window: flagged with `!`.
    public func isLate(at now: Date) -> Bool { isOverdue(at: now) || isPastWindow(at: now) }
}

/// A change waiting on the device, or what the server said of it.
public struct QueuedChange: Sendable, Codable, Equatable {
    public var changeID: String
    public var replica: String
    public var operation: String
    public var taskID: Int64?
    public var state: String
    public var reason: String?
    /// Why a pending change did not leave at the last sync.
    public var lastError: String?
}

extension LocalStore {
    /// Tasks on the device, sorted by window start or else due date (undated
    /// last), then priority (urgent first), then id. With `on`, only the tasks
    /// whose window, or (without one) due date, falls in that range: a day's work.
    public func tasks(assignee: Int64? = nil, replica: String? = nil, statuses: [String] = [],
                      on day: DateInterval? = nil) throws -> [LocalTask] {
        let from = day.map { Self.millis($0.start) }, to = day.map { Self.millis($0.end) }
        return try queue.read { db in
            try Row.fetchAll(db, sql: """
                SELECT k.replica, k.id, k.title, k.description, k.priority, k.team_id, k.assignee_id, k.due_at, k.status,
                       k.started_at, k.completed_at, k.completion_note, k.completed_by,
                       nullif(trim(l.name || ', ' || l.street || ', ' || l.city || ', ' || l.country, ', '), '')
                         || ' (' || l.latitude || ', ' || l.longitude || ')',
                       k.window_start, k.window_end, k.required_skills
                FROM tasks k LEFT JOIN locations l ON l.replica = k.replica AND l.id = k.location_id
                WHERE (?1 IS NULL OR k.assignee_id = ?1) AND (?2 IS NULL OR k.replica = ?2)
                  AND (?3 IS NULL
                       OR (k.window_start IS NOT NULL AND k.window_start < ?4 AND k.window_end > ?3)
                       OR (k.window_start IS NULL AND k.due_at >= ?3 AND k.due_at < ?4))
                ORDER BY coalesce(k.window_start, k.due_at) IS NULL, coalesce(k.window_start, k.due_at), k.due_at,
                         CASE k.priority WHEN 'urgent' THEN 0 WHEN 'high' THEN 1 WHEN 'normal' THEN 2 ELSE 3 END, k.id
                """, arguments: [assignee, replica, from, to]).map { r in
                let (start, end) = (Self.date(r[14]), Self.date(r[15]))
                let skills: String = r[16]
                return LocalTask(
                    replica: r[0], id: r[1], title: r[2], description: r[3], priority: r[4], teamID: r[5], assigneeID: r[6],
                    dueAt: Self.date(r[7]), status: r[8], startedAt: Self.date(r[9]), completedAt: Self.date(r[10]),
                    completedBy: r[12], completionNote: r[11], location: r[13],
                    window: start.flatMap { s in end.flatMap { try? TimeWindow(start: s, end: $0) } },
                    requiredSkills: skills.split(separator: ",").map(String.init)
                )
            }.filter { statuses.isEmpty || statuses.contains($0.status) }
        }
    }

    public func task(id: Int64) throws -> LocalTask? {
        try tasks().first { $0.id == id }
    }

    /// Queues a change made on the device and shows its effect at once; it is
    /// pushed at the next sync. Survives restarts: it is in the SQLite file.
    public func enqueue(_ operation: WorkerChange.Operation, taskID: Int64?, in replica: String, by personID: Int64,
                        note: String? = nil, latitude: Double? = nil, longitude: Double? = nil, at date: Date = Date()) throws -> String {
        let changeID = UUID().uuidString.lowercased()
        let millis = Int64((date.timeIntervalSince1970 * 1000).rounded())
        try queue.write { db in
            try db.execute(sql: """
                INSERT INTO outbox (change_id, replica, operation, task_id, note, made_at, latitude, longitude)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [changeID, replica, operation.rawValue, taskID, note, millis, latitude, longitude])
            switch operation {
            case .start:
                try db.execute(sql: "UPDATE tasks SET status = 'in_progress', started_at = ? WHERE replica = ? AND id = ?",
                               arguments: [millis, replica, taskID])
            case .complete:
                try db.execute(sql: """
                    UPDATE tasks SET status = 'completed', completed_at = ?, completed_by = ?, completion_note = ?
                    WHERE replica = ? AND id = ?
                    """, arguments: [millis, personID, note ?? "", replica, taskID])
            case .reopen:
                try db.execute(sql: """
                    UPDATE tasks SET status = 'in_progress', completed_at = NULL, completed_by = NULL, completion_note = NULL
                    WHERE replica = ? AND id = ?
                    """, arguments: [replica, taskID])
            case .claim:
                try db.execute(sql: "UPDATE tasks SET assignee_id = ?, status = 'assigned' WHERE replica = ? AND id = ?",
                               arguments: [personID, replica, taskID])
            case .checkin:
                break
            }
        }
        return changeID
    }

    /// Changes not yet accepted or rejected by the server, oldest first.
    public func pending() throws -> [(replica: String, change: WorkerChange)] {
        try queue.read { db in
            try Row.fetchAll(db, sql: """
                SELECT replica, change_id, operation, task_id, note, made_at, latitude, longitude
                FROM outbox WHERE state = 'pending' ORDER BY seq
                """).compactMap { r in
                guard let operation = WorkerChange.Operation(rawValue: r[2]) else { return nil }
                return (r[0], WorkerChange(id: r[1], operation: operation, taskID: r[3], note: r[4],
                                           madeAt: Date(timeIntervalSince1970: Double(r[5] as Int64) / 1000),
                                           latitude: r[6], longitude: r[7]))
            }
        }
    }

    func record(_ results: [WorkerChangeResult]) throws {
        try queue.write { db in
            for result in results {
                try db.execute(sql: "UPDATE outbox SET state = ?, reason = ?, last_error = NULL WHERE change_id = ?",
                               arguments: [result.status.rawValue, result.reason, result.id])
            }
        }
    }

    /// Notes why these changes are still waiting; they stay queued.
    func noteWaiting(_ changeIDs: [String], because error: String) throws {
        try queue.write { db in
            for id in changeIDs {
                try db.execute(sql: "UPDATE outbox SET last_error = ? WHERE change_id = ? AND state = 'pending'", arguments: [error, id])
            }
        }
    }

    /// Check-ins still queued for a replica that cannot take them (not
    /// generated, or no longer the worker's) go to `replica` instead.
    func moveWaitingCheckins(to replica: String) throws {
        try queue.write { db in
            try db.execute(sql: """
                UPDATE outbox SET replica = ? WHERE state = 'pending' AND operation = 'checkin'
                   AND replica NOT IN (SELECT name FROM replicas WHERE available AND kind <> 'common')
                """, arguments: [replica])
        }
    }

    /// Every queued change that is still pending or was rejected.
    public func outbox() throws -> [QueuedChange] {
        try queue.read { db in
            try Row.fetchAll(db, sql: """
                SELECT change_id, replica, operation, task_id, state, reason, last_error FROM outbox
                WHERE state != 'accepted' ORDER BY seq
                """).map {
                QueuedChange(changeID: $0[0], replica: $0[1], operation: $0[2], taskID: $0[3], state: $0[4], reason: $0[5],
                             lastError: $0[6])
            }
        }
    }

    static func date(_ millis: Int64?) -> Date? {
        millis.map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }

    static func millis(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }
}
