import Foundation
import GRDB
import SyncProtocol
import TeamworkModel

/// The columns of a replica's `tasks` row that field work reads and writes:
/// what the rules and the effect of a change (``TaskFacts``) need.
struct FieldWorkRow: FetchableRecord, Decodable {
    enum Columns: String, CodingKey, CaseIterable {
        case id
        case assigneeID = "assignee_id"
        case status
        case startedAt = "started_at"
        case completedAt = "completed_at"
        case completedBy = "completed_by"
        case completionNote = "completion_note"
        case requiredSkills = "required_skills"
        case checklist, answers
    }
    typealias CodingKeys = Columns

    var id: Int64
    var assigneeID: Int64?
    var status: TaskStatus
    /// Milliseconds since 1970, as the replica stores dates.
    var startedAt: Int64?
    var completedAt: Int64?
    var completedBy: Int64?
    var completionNote: String?
    /// Comma-separated, sorted.
    var requiredSkills: String
    /// JSON: the checklist version (manager-owned, never written here) and the answers.
    var checklist: String?
    var answers: String

    init(id: Int64, _ facts: TaskFacts) {
        checklist = facts.checklist.map(FieldTask.json)
        answers = FieldTask.json(facts.answers)
        self.id = id
        assigneeID = facts.assigneeID
        status = facts.status
        startedAt = facts.startedAt?.millisecondsSince1970
        completedAt = facts.completedAt?.millisecondsSince1970
        completedBy = facts.completedBy
        completionNote = facts.completionNote
        requiredSkills = facts.requiredSkills.joined(separator: ",")
    }

    var facts: TaskFacts {
        TaskFacts(
            assigneeID: assigneeID, status: status, startedAt: startedAt.map(Date.init(millisecondsSince1970:)),
            completedAt: completedAt.map(Date.init(millisecondsSince1970:)),
            completedBy: completedBy, completionNote: completionNote,
            requiredSkills: requiredSkills.split(separator: ",").map(String.init),
            checklist: try? FieldTask.checklist(json: checklist), answers: (try? FieldTask.answers(json: answers)) ?? [:])
    }

    static let selectSQL = "SELECT \(Columns.allCases.map(\.rawValue).joined(separator: ", ")) FROM tasks WHERE id = ?"

    static func fetchOne(_ db: Database, id: Int64) throws -> FieldWorkRow? {
        try fetchOne(db.cachedStatement(sql: selectSQL), arguments: [id])
    }

    /// Writes the worker-owned fields (and the assignee a claim sets) with a new row version, so teammates pull it.
    func write(_ db: Database, version: Int64) throws {
        try db.cachedStatement(
            sql: """
                UPDATE tasks SET assignee_id = ?, status = ?, started_at = ?, completed_at = ?, completed_by = ?,
                    completion_note = ?, answers = ?, row_version = ? WHERE id = ?
                """
        ).execute(arguments: [
            assigneeID, status.rawValue, startedAt, completedAt, completedBy, completionNote, answers,
            version, id,
        ])
    }
}
