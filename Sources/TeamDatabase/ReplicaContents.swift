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
        /// Whether a value the master's view holds does not parse (read as absent in `master`).
        public var damaged: Bool
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
            let reader = try ReplicaTaskReader(db)
            let tasks = try Row.fetchAll(db, sql: "SELECT \(reader.selected) FROM tasks ORDER BY id").map { row -> TaskRow in
                // A value the master's view holds damaged marks the task, and reads as absent (lenient).
                let strict = try? FieldTask(values: { ReplicaTaskReader.value(row, $0, field: false) })
                let master = try strict ?? FieldTask(values: { ReplicaTaskReader.value(row, $0, field: false) }, lenient: true)
                let field = try ReplicaTaskReader.asTheFieldSays(row)
                let damaged = strict == nil
                return TaskRow(
                    master: master, status: field.status, startedAt: field.startedAt, completedAt: field.completedAt,
                    completedBy: field.completedBy, completionNote: field.completionNote, answers: field.answers,
                    rowVersion: row["row_version"], damaged: damaged)
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
}

extension ReplicaContents {
    /// The parts catalogue a common replica holds, a line per part as ``catalogueLine(id:code:name:unit:price:currency:retired:)``
    /// writes it.
    public static func catalogue(path: String) throws -> [Int64: String] {
        try readOnly(path: path) { db in
            var parts: [Int64: String] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT id, code, name, unit, unit_price, currency, retired FROM parts") {
                let id: Int64 = row["id"]
                parts[id] = catalogueLine(
                    id: id, code: row["code"], name: row["name"], unit: row["unit"], price: row["unit_price"], currency: row["currency"],
                    retired: (row["retired"] as Int64? ?? 0) != 0)
            }
            return parts
        }
    }

    /// One part as verify compares it, on the master and in a copy.
    public static func catalogueLine(
        id: Int64, code: String, name: String, unit: String, price: String?, currency: String?, retired: Bool
    ) -> String {
        "\(id) \(code) \(name) \(unit) \(price ?? "-") \(currency ?? "-")\(retired ? " retired" : "")"
    }
}
