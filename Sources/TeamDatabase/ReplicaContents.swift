import Foundation
import GRDB
import TeamworkModel

/// Everything a team or personal replica holds, read in one transaction: what
/// `verify` compares with the master and what tests inspect.
public struct ReplicaContents: Sendable {
    public struct TaskRow: Sendable, Equatable {
        /// The task as the master last said it (manager-owned fields and the master's worker-owned fields).
        public var master: FieldTask
        /// What the field says now: the worker-owned fields.
        public var status: TaskStatus
        public var startedAt: Date?
        public var completedAt: Date?
        public var completedBy: Int64?
        public var completionNote: String?
        public var answers: [String: ChecklistAnswer]
        public var rowVersion: Int64
    }

    public struct Member: Sendable, Equatable {
        public var personID: Int64
        public var firstName: String
        public var lastName: String
        public var role: String
    }

    public var meta: ReplicaMeta
    public var tasks: [TaskRow]
    public var members: [Member]
    public var locationIDs: [Int64]
    /// Worker changes the sync endpoint accepted into this file.
    public var acceptedWorkerChanges: Int
    /// Worker changes it refused, kept with their reason.
    public var rejectedWorkerChanges: Int

    /// Reads a team or personal replica file.
    public static func read(path: String) throws -> ReplicaContents {
        return try readOnly(path: path) { db in
            let meta = try ReplicaMeta.read(db)
            let tasks = try Row.fetchAll(
                db,
                sql: """
                    SELECT id, title, description, priority, master_status, team_id, assignee_id, location_id, due_at,
                           created_at, updated_at, master_started_at, master_completed_at, master_completed_by,
                           master_completion_note, master_version, status, started_at, completed_at, completed_by,
                           completion_note, row_version,
                           \(meta.schemaVersion < 3 ? "NULL AS window_start, NULL AS window_end, '' AS required_skills"
                                                : "window_start, window_end, required_skills"),
                           \(meta.schemaVersion < 5 ? "'UTC' AS time_zone" : "time_zone"),
                           \(meta.schemaVersion < 6 ? "NULL AS plan_id, NULL AS plan_date" : "plan_id, plan_date"),
                           \(meta.schemaVersion < 7 ? "NULL AS checklist, '{}' AS master_answers, '{}' AS answers"
                                                : "checklist, master_answers, answers"),
                           \(meta.schemaVersion < 8 ? "NULL AS planned_start, NULL AS duration_minutes" : "planned_start, duration_minutes")
                    FROM tasks ORDER BY id
                    """
            ).map { row -> TaskRow in
                let (windowStart, windowEnd) = (date(row["window_start"]), date(row["window_end"]))
                let master = FieldTask(
                    id: row["id"], title: row["title"], description: row["description"],
                    priority: Priority(rawValue: row["priority"]) ?? .normal,
                    status: TaskStatus(rawValue: row["master_status"]) ?? .open, teamID: row["team_id"], assigneeID: row["assignee_id"],
                    locationID: row["location_id"],
                    dueAt: date(row["due_at"]), createdBy: nil, createdAt: date(row["created_at"])!, updatedAt: date(row["updated_at"])!,
                    startedAt: date(row["master_started_at"]), completedAt: date(row["master_completed_at"]),
                    completedBy: row["master_completed_by"], completionNote: row["master_completion_note"],
                    version: row["master_version"], requiredSkills: ReplicaSchema.skills(row["required_skills"]) ?? [],
                    window: windowStart.flatMap { start in windowEnd.flatMap { try? TimeWindow(start: start, end: $0) } },
                    timeZone: row["time_zone"], planID: row["plan_id"],
                    planDate: (row["plan_date"] as String?).flatMap { try? LocalDate(parsing: $0) },
                    checklist: try? FieldTask.checklist(json: row["checklist"]),
                    answers: (try? FieldTask.answers(json: row["master_answers"])) ?? [:],
                    durationMinutes: row["duration_minutes"], plannedStart: date(row["planned_start"])
                )
                return TaskRow(
                    master: master, status: TaskStatus(rawValue: row["status"]) ?? .open, startedAt: date(row["started_at"]),
                    completedAt: date(row["completed_at"]), completedBy: row["completed_by"], completionNote: row["completion_note"],
                    answers: (try? FieldTask.answers(json: row["answers"])) ?? [:], rowVersion: row["row_version"]
                )
            }
            let members = try Row.fetchAll(db, sql: "SELECT person_id, first_name, last_name, role FROM members ORDER BY person_id")
                .map { Member(personID: $0["person_id"], firstName: $0["first_name"], lastName: $0["last_name"], role: $0["role"]) }
            let locations = try Int64.fetchAll(db, sql: "SELECT id FROM locations ORDER BY id")
            // A version 1 file (upgraded in place on its next write) kept no refusals.
            let counts = try Row.fetchOne(
                db,
                sql: meta.schemaVersion < 2
                    ? "SELECT count(*) AS accepted, 0 AS rejected FROM worker_changes"
                    : """
                    SELECT count(*) FILTER (WHERE rejection IS NULL) AS accepted, count(*) FILTER (WHERE rejection IS NOT NULL) AS rejected
                    FROM worker_changes
                    """)
            return ReplicaContents(
                meta: meta, tasks: tasks, members: members, locationIDs: locations,
                acceptedWorkerChanges: counts?["accepted"] ?? 0, rejectedWorkerChanges: counts?["rejected"] ?? 0)
        }
    }

    static func date(_ millis: Int64?) -> Date? {
        millis.map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }
}
