import Foundation
import GRDB
import SyncProtocol
import TeamworkModel

/// A task as the device holds it: the columns ``TaskSchema`` says travel (a column added there is kept, read
/// back and printed by `task show --json` with no change here), the site as a person reads it, and its copy.
/// Read as the task it carries (`task.title`, `task.window`).
@dynamicMemberLookup
public struct LocalTask: Sendable, Codable, Equatable {
    public var replica: String
    public var task: FieldTask
    /// Where it is: the site's name, street, city and country, then its coordinates.
    public var location: String?

    public init(replica: String, task: FieldTask, location: String?) {
        (self.replica, self.task, self.location) = (replica, task, location)
    }

    public subscript<Value>(dynamicMember path: KeyPath<FieldTask, Value>) -> Value { task[keyPath: path] }

    enum CodingKeys: String, CodingKey { case replica, location }

    /// The task's own keys (``FieldTask``'s), with `replica` and `location` beside them.
    public init(from decoder: any Decoder) throws {
        task = try FieldTask(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        replica = try container.decode(String.self, forKey: .replica)
        location = try container.decodeIfPresent(String.self, forKey: .location)
    }

    public func encode(to encoder: any Encoder) throws {
        try task.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(replica, forKey: .replica)
        try container.encodeIfPresent(location, forKey: .location)
    }

    /// The ETA at `now` (see ``ExpectedArrival``).
    public func expectedArrival(at now: Date) -> ExpectedArrival? {
        ExpectedArrival(planned: task.plannedStart, status: task.status, due: task.dueAt, window: task.window, now: now)
    }

    /// Where the task is as a person reads it (the site's name, street, city), without its coordinates.
    public var address: String? {
        location.map { text in text.range(of: " (", options: .backwards).map { String(text[..<$0.lowerBound]) } ?? text }
    }

    /// What the shared rules need to know of it (see `WorkerChange.rejection`).
    public var facts: TaskFacts {
        TaskFacts(
            assigneeID: task.assigneeID, status: task.status, startedAt: task.startedAt, completedAt: task.completedAt,
            completedBy: task.completedBy, completionNote: task.completionNote, requiredSkills: task.requiredSkills,
            checklist: task.checklist, answers: task.answers)
    }

    public var isClosed: Bool { task.status.isClosed }
    public func isOverdue(at now: Date) -> Bool { task.isOverdue(at: now) }
    public func isPastWindow(at now: Date) -> Bool { task.isPastWindow(at: now) }
    /// Overdue or past its window: flagged with `!`.
    public func isLate(at now: Date) -> Bool { task.isLate(at: now) }
}

/// A change waiting on the device, or what the server said of it.
public struct QueuedChange: Sendable, Codable, Equatable {
    public var changeID: String
    public var replica: String
    public var operation: String
    public var taskID: Int64?
    /// When the worker made it, on the device's clock.
    public var madeAt: Date
    /// `pending` (not sent yet), `rejected` (refused by the server when sent)
    /// or `refused` (taken by the server, then refused by the master).
    public var state: String
    public var reason: String?
    /// Why a pending change did not leave at the last sync.
    public var lastError: String?
}

extension LocalStore {
    /// Tasks on the device, sorted by the day planner's expected start, else window start, else due date (undated
    /// last), then priority (urgent first), then id. With `on`, only the tasks
    /// whose window, or (without one) due date, falls on that day on the task's
    /// own wall clock (``TimeWindow/falls(on:due:window:in:)``): a day's work.
    public func tasks(
        assignee: Int64? = nil, replica: String? = nil, statuses: [String] = [],
        on day: LocalDate? = nil
    ) throws -> [LocalTask] {
        try queue.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT k.*, nullif(trim(l.name || ', ' || l.street || ', ' || l.city || ', ' || l.country, ', '), '')
                             || ' (' || l.latitude || ', ' || l.longitude || ')' AS location_text
                    FROM tasks k LEFT JOIN locations l ON l.replica = k.replica AND l.id = k.location_id
                    WHERE (?1 IS NULL OR k.assignee_id = ?1) AND (?2 IS NULL OR k.replica = ?2)
                    ORDER BY coalesce(k.planned_start, k.window_start, k.due_at) IS NULL,
                             coalesce(k.planned_start, k.window_start, k.due_at), k.due_at,
                             CASE k.priority WHEN 'urgent' THEN 0 WHEN 'high' THEN 1 WHEN 'normal' THEN 2 ELSE 3 END, k.id
                    """, arguments: [assignee, replica]
            ).compactMap { row in
                Self.task(row).map { LocalTask(replica: row["replica"], task: $0, location: row["location_text"]) }
            }.filter { task in
                (statuses.isEmpty || statuses.contains(task.status.rawValue))
                    && (day.map { TimeWindow.falls(on: $0, due: task.dueAt, window: task.window, in: task.zone) } ?? true)
            }
        }
    }

    public func task(id: Int64) throws -> LocalTask? {
        try tasks().first { $0.id == id }
    }

    /// Queues a change made on the device and shows its effect at once; it is
    /// pushed at the next sync. Survives restarts: it is in the SQLite file.
    public func enqueue(
        _ operation: WorkerChange.Operation, taskID: Int64?, in replica: String, by personID: Int64,
        note: String? = nil, latitude: Double? = nil, longitude: Double? = nil, item: String? = nil,
        value: String? = nil, attachment: Attachment? = nil, at date: Date = Date()
    ) throws -> String {
        let changeID = UUID().uuidString.lowercased()
        let change = WorkerChange(
            id: changeID, operation: operation, taskID: taskID, note: note, madeAt: date,
            latitude: latitude, longitude: longitude, item: item, value: value, blob: attachment?.blob,
            size: attachment?.size, mediaType: attachment?.mediaType, signer: attachment?.signer)
        try queue.write { db in
            if let attachment { try place(attachment) }
            try db.execute(
                sql: """
                    INSERT INTO outbox (change_id, replica, operation, task_id, note, made_at, latitude, longitude, person_id, item, value,
                                        blob, size, media_type, signer)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    changeID, replica, operation.rawValue, taskID, note, date.millisecondsSince1970, latitude, longitude, personID,
                    item, value, attachment?.blob, attachment?.size, attachment?.mediaType, attachment?.signer,
                ])
            if let taskID, let row = try DeviceTaskRow.fetchOne(db, replica: replica, id: taskID) {
                try row.showing(change.effect(on: row.shown, by: personID, at: date)).write(db)
            }
        }
        return changeID
    }

    /// Takes back a change still queued on the device (not sent yet): the
    /// newest one, or `changeID`. Refused while a later queued change is about
    /// the same task (take that back first). Returns what was taken back.
    public func undo(_ changeID: String? = nil) throws -> QueuedChange {
        try queue.write { db in
            let pending = try OutboxRow.fetchAll(db, sql: "SELECT * FROM outbox WHERE state = 'pending' ORDER BY seq")
            guard let target = changeID.map({ id in pending.first { $0.changeID == id } }) ?? pending.last else {
                throw TeamworkError.notFound(
                    changeID.map { "no queued change \($0): it was sent already, or never made" }
                        ?? "nothing is queued: every change was sent already")
            }
            if let taskID = target.taskID,
                let later = pending.last(where: { $0.seq > target.seq && $0.taskID == taskID && $0.replica == target.replica })
            {
                throw TeamworkError.conflict("a later queued \(later.operation) of task \(taskID) depends on it: take that back first")
            }
            try db.execute(sql: "DELETE FROM outbox WHERE seq = ?", arguments: [target.seq])
            if let taskID = target.taskID { try Self.replay(db, replica: target.replica, taskIDs: [taskID]) }
            return target.queued
        }
    }

    /// Shows the device's own queued changes over what the server last sent:
    /// each task the server's view, then the pending changes about it that the
    /// rules still allow, in the order they were made (the effect of each written
    /// once, in ``WorkerChange/effect(on:by:at:)``).
    static func replay(_ db: Database, replica: String, taskIDs: Set<Int64>? = nil) throws {
        let pending = try OutboxRow.fetchAll(
            db,
            sql: """
                SELECT * FROM outbox WHERE state = 'pending' AND replica = ? AND task_id IS NOT NULL ORDER BY seq
                """, arguments: [replica])
        let byTask = Dictionary(grouping: pending, by: { $0.taskID! })
        let touched = taskIDs ?? Set(byTask.keys)
        for taskID in touched.sorted() {
            guard let row = try DeviceTaskRow.fetchOne(db, replica: replica, id: taskID) else { continue }
            var facts = row.server
            for queued in byTask[taskID] ?? [] {
                guard let change = queued.change, let person = queued.personID else { continue }
                let worker = FieldWorker(id: person, skills: nil)
                if change.rejection(by: worker, task: facts, inTeam: replica.hasPrefix("team-"), receivedAt: change.madeAt) == nil {
                    facts = change.effect(on: facts, by: person, at: change.madeAt)
                }
            }
            try row.showing(facts).write(db)
        }
    }

    /// Changes not yet accepted or rejected by the server, oldest first; with
    /// `person`, only the ones that person made.
    public func pending(madeBy person: Int64? = nil) throws -> [(replica: String, change: WorkerChange)] {
        try queue.read { db in
            try OutboxRow.fetchAll(db, sql: "SELECT * FROM outbox WHERE state = 'pending' ORDER BY seq")
                .filter { person == nil || $0.personID == person }
                .compactMap { row in row.change.map { (row.replica, $0) } }
        }
    }

    /// How many changes wait to be sent, and who made them.
    public func pendingByPerson() throws -> [Int64?: Int] {
        try queue.read { db in
            var counts: [Int64?: Int] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT person_id, count(*) AS pending FROM outbox WHERE state = 'pending' GROUP BY person_id")
            {
                counts[row["person_id"] as Int64?] = row["pending"]
            }
            return counts
        }
    }

    /// Drops every change still queued that someone other than `person` made
    /// (`login --discard-queue`), and shows their tasks as the server last sent them.
    public func discardQueue(madeByOtherThan person: Int64) throws -> Int {
        try queue.write { db in
            let others = "state = 'pending' AND person_id IS NOT ?"
            let touched = try Row.fetchAll(
                db,
                sql: """
                    SELECT DISTINCT replica, task_id FROM outbox WHERE \(others) AND task_id IS NOT NULL
                    """, arguments: [person]
            ).map { (replica: $0["replica"] as String, task: $0["task_id"] as Int64) }
            try db.execute(sql: "DELETE FROM outbox WHERE \(others)", arguments: [person])
            let dropped = db.changesCount
            for (replica, tasks) in Dictionary(grouping: touched, by: \.replica) {
                try Self.replay(db, replica: replica, taskIDs: Set(tasks.map(\.task)))
            }
            return dropped
        }
    }

    /// Marks the device's changes the master refused (pulled from a replica's
    /// `refusals`) with the master's reason. Only the signed-in person's: a
    /// teammate's refusal is theirs to read.
    static func markRefused(_ db: Database, _ refusals: [ChangePage.Refusal]) throws {
        guard !refusals.isEmpty,
            let me = try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = 'person_id'").flatMap({ Int64($0) })
        else { return }
        for refusal in refusals where refusal.personID == me {
            // The dispatcher's decision, once it comes, beside the refusal: the worker learns their work was set aside, and why.
            let reason = "refused by the master: " + refusal.reason + (refusal.decision.map { "; the dispatcher decided: " + $0 } ?? "")
            try db.execute(
                sql: """
                    UPDATE outbox SET state = 'refused', reason = ?, last_error = NULL, unconfirmed = 0
                    WHERE change_id = ? AND state IN ('accepted', 'pending', 'refused', 'rejected')
                    """, arguments: [reason, refusal.changeID])
        }
    }

    /// What the server said of each change. An accepted change stays unconfirmed, and is sent again
    /// at each sync (``unconfirmed(madeBy:limit:)``), until a host says the master's ledger holds it:
    /// the host that accepted it may lose it with its disk before its listener takes it to the master.
    func record(_ results: [WorkerChangeResult]) throws {
        try queue.write { db in
            for result in results {
                try db.execute(
                    sql: "UPDATE outbox SET state = ?, reason = ?, last_error = NULL, unconfirmed = ? WHERE change_id = ?",
                    arguments: [
                        result.status.rawValue, result.reason, result.status == .accepted && result.settled != true, result.id,
                    ])
            }
        }
    }

    /// Changes `person` made that a host accepted and the master has not confirmed yet, oldest first,
    /// at most `limit`.
    public func unconfirmed(madeBy person: Int64, limit: Int) throws -> [(replica: String, change: WorkerChange)] {
        try queue.read { db in
            try OutboxRow.fetchAll(
                db, sql: "SELECT * FROM outbox WHERE state = 'accepted' AND unconfirmed AND person_id = ? ORDER BY seq LIMIT ?",
                arguments: [person, limit]
            ).compactMap { row in row.change.map { (row.replica, $0) } }
        }
    }

    /// How many accepted changes of the signed-in person wait for the master's confirmation (another
    /// person's are never sent again under this one's token).
    public func unconfirmedCount() throws -> Int {
        try queue.read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT count(*) FROM outbox WHERE state = 'accepted' AND unconfirmed
                       AND person_id IS (SELECT CAST(value AS INTEGER) FROM settings WHERE key = 'person_id')
                    """) ?? 0
        }
    }

    /// Stops sending `changeIDs` again: the replica they went to is no longer the worker's, so no host can take them.
    func giveUpConfirming(_ changeIDs: [String]) throws {
        try queue.write { db in
            for id in changeIDs { try db.execute(sql: "UPDATE outbox SET unconfirmed = 0 WHERE change_id = ?", arguments: [id]) }
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
            try db.execute(
                sql: """
                    UPDATE outbox SET replica = ? WHERE state = 'pending' AND operation = 'checkin'
                       AND replica NOT IN (SELECT name FROM replicas WHERE available AND kind <> 'common')
                    """, arguments: [replica])
        }
    }

    /// Every queued change that is still pending or was rejected.
    public func outbox() throws -> [QueuedChange] {
        try queue.read { db in
            try OutboxRow.fetchAll(db, sql: "SELECT * FROM outbox WHERE state != 'accepted' ORDER BY seq").map(\.queued)
        }
    }

    static func date(_ millis: Int64?) -> Date? {
        millis.map { Date(millisecondsSince1970: $0) }
    }
}

/// One line of what this device recorded as used on a task (``LocalStore/materials(taskID:person:)``).
public struct RecordedMaterial: Sendable, Encodable, Equatable {
    /// The part's code, or `nil` for a described line.
    public var part: String?
    /// A line's description (not in the catalogue).
    public var description: String?
    public var quantity: String
    /// `pending` (not sent yet) or `accepted` (the sync endpoint has it; the master decides).
    public var state: String
}

extension LocalStore {
    /// What `person` recorded on task `taskID` from this device, a line per part or description:
    /// the latest quantity not refused, and none once set to 0.
    public func materials(taskID: Int64, person: Int64) throws -> [RecordedMaterial] {
        try queue.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT item, note, value, state FROM outbox
                    WHERE operation = 'use' AND task_id = ? AND person_id = ? AND state IN ('pending', 'accepted')
                    ORDER BY seq
                    """, arguments: [taskID, person])
            var lines: [String: RecordedMaterial] = [:]
            var order: [String] = []
            for row in rows {
                let part: String? = row["item"], note: String? = row["note"]
                let key = part.map { "part:" + $0.lowercased() } ?? "line:" + (note ?? "").trimmingCharacters(in: .whitespaces).lowercased()
                if lines[key] == nil { order.append(key) }
                lines[key] = RecordedMaterial(
                    part: part, description: part == nil ? note : nil, quantity: row["value"], state: row["state"])
            }
            return order.compactMap { lines[$0] }.filter { $0.quantity.contains { $0 != "0" && $0 != "." } }
        }
    }
}

/// One entry of time this device recorded on a task (``LocalStore/timeEntries(taskID:person:)``).
public struct RecordedTime: Sendable, Encodable, Equatable {
    /// `work` or `travel`.
    public var kind: String
    public var start: Date
    public var end: Date
    /// `pending` (not sent yet) or `accepted` (the sync endpoint has it; the master decides).
    public var state: String
}

extension LocalStore {
    /// What `person` recorded as time on task `taskID` from this device, an entry per kind: the latest
    /// not refused, and none once cleared (an interval of no length).
    public func timeEntries(taskID: Int64, person: Int64) throws -> [RecordedTime] {
        try recordedTime(person: person, taskID: taskID).map {
            RecordedTime(kind: $0.span.kind, start: $0.span.start, end: $0.span.end, state: $0.state)
        }
    }

    /// Every entry `person` recorded from this device, on any task (the latest per task and kind, not
    /// refused, not cleared): what a new entry must not overlap (``TimeOnJob/clash(_:among:)``).
    public func timeSpans(person: Int64) throws -> [TimeOnJob.Span] {
        try recordedTime(person: person, taskID: nil).map(\.span)
    }

    private func recordedTime(person: Int64, taskID: Int64?) throws -> [(span: TimeOnJob.Span, state: String)] {
        try queue.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT task_id, item, value, state FROM outbox
                    WHERE operation = 'time' AND (?1 IS NULL OR task_id = ?1) AND person_id = ?2 AND state IN ('pending', 'accepted')
                    ORDER BY seq
                    """, arguments: [taskID, person])
            var latest: [String: (span: TimeOnJob.Span, state: String)] = [:]
            var order: [String] = []
            for row in rows {
                guard let task: Int64 = row["task_id"], let kind: String = row["item"], let value: String = row["value"],
                    let interval = TimeOnJob.interval(value)
                else { continue }
                let key = "\(task):\(kind)"
                if latest[key] == nil { order.append(key) }
                latest[key] = (TimeOnJob.Span(taskID: task, kind: kind, start: interval.start, end: interval.end), row["state"])
            }
            return order.compactMap { latest[$0] }.filter { $0.span.end > $0.span.start }
                .sorted {
                    ($0.span.taskID, TimeOnJob.Kind(rawValue: $0.span.kind)?.order ?? 2) < (
                        $1.span.taskID, TimeOnJob.Kind(rawValue: $1.span.kind)?.order ?? 2
                    )
                }
        }
    }
}
