import Foundation
import GRDB
import SyncProtocol
import TeamworkModel

/// The field-work columns of a device's `tasks` row: what the device shows
/// (the server's view with the device's queued changes played over it) and
/// the server's view as last pulled (`server_*`), from which the shown
/// values are worked out again whenever either moves.
struct DeviceTaskRow: FetchableRecord, Decodable {
    enum CodingKeys: String, CodingKey {
        case replica, id
        case assigneeID = "assignee_id"
        case status
        case startedAt = "started_at"
        case completedAt = "completed_at"
        case completedBy = "completed_by"
        case completionNote = "completion_note"
        case requiredSkills = "required_skills"
        case serverAssigneeID = "server_assignee_id"
        case serverStatus = "server_status"
        case serverStartedAt = "server_started_at"
        case serverCompletedAt = "server_completed_at"
        case serverCompletedBy = "server_completed_by"
        case serverCompletionNote = "server_completion_note"
        case checklist, answers
        case serverAnswers = "server_answers"
    }

    var replica: String
    var id: Int64
    var assigneeID: Int64?
    var status: TaskStatus
    var startedAt: Int64?
    var completedAt: Int64?
    var completedBy: Int64?
    var completionNote: String?
    var requiredSkills: String
    var serverAssigneeID: Int64?
    var serverStatus: TaskStatus
    var serverStartedAt: Int64?
    var serverCompletedAt: Int64?
    var serverCompletedBy: Int64?
    var serverCompletionNote: String?
    /// JSON: the checklist version the task carries, the answers shown and the server's.
    var checklist: String?
    var answers: String
    var serverAnswers: String

    static func fetchOne(_ db: Database, replica: String, id: Int64) throws -> DeviceTaskRow? {
        try fetchOne(db, sql: "SELECT * FROM tasks WHERE replica = ? AND id = ?", arguments: [replica, id])
    }

    private var skills: [String] { requiredSkills.split(separator: ",").map(String.init) }
    private var form: ChecklistForm? { try? FieldTask.checklist(json: checklist) }

    /// What the device shows.
    var shown: TaskFacts {
        TaskFacts(
            assigneeID: assigneeID, status: status, startedAt: LocalStore.date(startedAt), completedAt: LocalStore.date(completedAt),
            completedBy: completedBy, completionNote: completionNote, requiredSkills: skills,
            checklist: form, answers: (try? FieldTask.answers(json: answers)) ?? [:])
    }

    /// What the server last said.
    var server: TaskFacts {
        TaskFacts(
            assigneeID: serverAssigneeID, status: serverStatus, startedAt: LocalStore.date(serverStartedAt),
            completedAt: LocalStore.date(serverCompletedAt), completedBy: serverCompletedBy,
            completionNote: serverCompletionNote, requiredSkills: skills,
            checklist: form, answers: (try? FieldTask.answers(json: serverAnswers)) ?? [:])
    }

    /// This row showing `facts`.
    func showing(_ facts: TaskFacts) -> DeviceTaskRow {
        var row = self
        row.assigneeID = facts.assigneeID
        row.status = facts.status
        row.startedAt = facts.startedAt?.millisecondsSince1970
        row.completedAt = facts.completedAt?.millisecondsSince1970
        row.completedBy = facts.completedBy
        row.completionNote = facts.completionNote
        row.answers = FieldTask.json(facts.answers)
        return row
    }

    /// Writes the shown values.
    func write(_ db: Database) throws {
        try db.execute(
            sql: """
                UPDATE tasks SET assignee_id = ?, status = ?, started_at = ?, completed_at = ?, completed_by = ?, completion_note = ?,
                    answers = ?
                WHERE replica = ? AND id = ?
                """, arguments: [assigneeID, status.rawValue, startedAt, completedAt, completedBy, completionNote, answers, replica, id])
    }
}

/// One row of the device's queue of changes (`outbox`).
struct OutboxRow: FetchableRecord, Decodable {
    enum CodingKeys: String, CodingKey {
        case seq
        case changeID = "change_id"
        case replica, operation
        case taskID = "task_id"
        case note
        case madeAt = "made_at"
        case latitude, longitude
        case item, value, blob, size
        case mediaType = "media_type"
        case signer
        case state, reason
        case lastError = "last_error"
        case personID = "person_id"
    }

    var seq: Int64
    var changeID: String
    var replica: String
    var operation: String
    var taskID: Int64?
    var note: String?
    /// Milliseconds since 1970.
    var madeAt: Int64
    var latitude: Double?
    var longitude: Double?
    var item: String?
    var value: String?
    var blob: String?
    var size: Int64?
    var mediaType: String?
    var signer: String?
    var state: String
    var reason: String?
    var lastError: String?
    /// Who made it (`nil` only for changes queued before the device recorded it).
    var personID: Int64?

    /// The change as it is pushed; `nil` for an operation this tool does not know.
    var change: WorkerChange? {
        WorkerChange.Operation(rawValue: operation).map {
            WorkerChange(
                id: changeID, operation: $0, taskID: taskID, note: note, madeAt: LocalStore.date(madeAt)!,
                latitude: latitude, longitude: longitude, item: item, value: value, blob: blob, size: size,
                mediaType: mediaType, signer: signer)
        }
    }

    var queued: QueuedChange {
        QueuedChange(
            changeID: changeID, replica: replica, operation: operation, taskID: taskID,
            madeAt: Date(millisecondsSince1970: madeAt), state: state, reason: reason,
            lastError: lastError)
    }
}
