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
            let tasks = try Row.fetchAll(db, sql: """
                SELECT id, title, description, priority, master_status, team_id, assignee_id, location_id, due_at,
                       created_at, updated_at, master_started_at, master_completed_at, master_completed_by,
                       master_completion_note, master_version, status, started_at, completed_at, completed_by,
                       completion_note, row_version, \(meta.schemaVersion < 3 ? "NULL, NULL, ''" : "window_start, window_end, required_skills"),
                       \(meta.schemaVersion < 5 ? "'UTC'" : "time_zone"), \(meta.schemaVersion < 6 ? "NULL, NULL" : "plan_id, plan_date"),
                       \(meta.schemaVersion < 7 ? "NULL, '{}', '{}'" : "checklist, master_answers, answers")
                FROM tasks ORDER BY id
                """).map { row -> TaskRow in
                let (windowStart, windowEnd) = (date(row[22]), date(row[23]))
                let master = FieldTask(
                    id: row[0], title: row[1], description: row[2], priority: Priority(rawValue: row[3]) ?? .normal,
                    status: TaskStatus(rawValue: row[4]) ?? .open, teamID: row[5], assigneeID: row[6], locationID: row[7],
                    dueAt: date(row[8]), createdBy: nil, createdAt: date(row[9])!, updatedAt: date(row[10])!,
                    startedAt: date(row[11]), completedAt: date(row[12]), completedBy: row[13], completionNote: row[14],
                    version: row[15], requiredSkills: ReplicaSchema.skills(row[24]) ?? [],
                    window: windowStart.flatMap { start in windowEnd.flatMap { try? TimeWindow(start: start, end: $0) } },
                    timeZone: row[25], planID: row[26], planDate: (row[27] as String?).flatMap { try? LocalDate(parsing: $0) },
                    checklist: try? FieldTask.checklist(json: row[28]), answers: (try? FieldTask.answers(json: row[29])) ?? [:]
                )
                return TaskRow(
                    master: master, status: TaskStatus(rawValue: row[16]) ?? .open, startedAt: date(row[17]),
                    completedAt: date(row[18]), completedBy: row[19], completionNote: row[20],
                    answers: (try? FieldTask.answers(json: row[30])) ?? [:], rowVersion: row[21]
                )
            }
            let members = try Row.fetchAll(db, sql: "SELECT person_id, first_name, last_name, role FROM members ORDER BY person_id")
                .map { Member(personID: $0[0], firstName: $0[1], lastName: $0[2], role: $0[3]) }
            let locations = try Int64.fetchAll(db, sql: "SELECT id FROM locations ORDER BY id")
            // A version 1 file (upgraded in place on its next write) kept no refusals.
            let counts = try Row.fetchOne(db, sql: meta.schemaVersion < 2 ? "SELECT count(*), 0 FROM worker_changes" : """
                SELECT count(*) FILTER (WHERE rejection IS NULL), count(*) FILTER (WHERE rejection IS NOT NULL) FROM worker_changes
                """)
            return ReplicaContents(meta: meta, tasks: tasks, members: members, locationIDs: locations,
                                   acceptedWorkerChanges: counts?[0] ?? 0, rejectedWorkerChanges: counts?[1] ?? 0)
        }
    }

    static func date(_ millis: Int64?) -> Date? {
        millis.map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }
}
