import Foundation
import TeamworkModel

/// A task as field work sees it: who has it and the worker-owned fields. What
/// the rules read (``WorkerChange/rejection(by:task:inTeam:receivedAt:)``) and
/// what the effect of a change writes (``WorkerChange/effect(on:by:at:)``), on
/// the device and in the replica alike.
public struct TaskFacts: Sendable, Equatable, Codable {
    public var assigneeID: Int64?
    public var status: TaskStatus
    public var startedAt: Date?
    public var completedAt: Date?
    public var completedBy: Int64?
    public var completionNote: String?
    /// Skills whoever works on it must have (sorted, no duplicates).
    public var requiredSkills: [String]
    /// The checklist version it carries, if any, and the latest answer to each item.
    public var checklist: ChecklistForm?
    public var answers: [String: ChecklistAnswer]

    public init(
        assigneeID: Int64?, status: TaskStatus, startedAt: Date? = nil, completedAt: Date? = nil,
        completedBy: Int64? = nil, completionNote: String? = nil, requiredSkills: [String] = [],
        checklist: ChecklistForm? = nil, answers: [String: ChecklistAnswer] = [:]
    ) {
        self.checklist = checklist
        self.answers = answers
        self.assigneeID = assigneeID
        self.status = status
        self.startedAt = startedAt
        self.completedAt = completedAt
        self.completedBy = completedBy
        self.completionNote = completionNote
        self.requiredSkills = requiredSkills
    }

    /// The required skills `skills` lacks, sorted.
    public func missingSkills(_ skills: some Collection<String>) -> [String] {
        let held = Set(skills)
        return requiredSkills.filter { !held.contains($0) }.sorted()
    }
}

/// The person making a change, as far as the rules need to know them.
public struct FieldWorker: Sendable, Equatable {
    public var id: Int64
    /// Their skills; `nil` when the copy at hand does not know them (an older
    /// replica), in which case only the master checks skills.
    public var skills: [String]?

    public init(id: Int64, skills: [String]?) {
        self.id = id
        self.skills = skills
    }
}

extension WorkerChange {
    /// The task as it stands after this change, which the rules allowed: the
    /// effect of field work, written once. The device shows it when the change
    /// is queued, the sync endpoint writes it into the replica when it accepts
    /// the change, and the master's PL/pgSQL (`teamwork_apply_field_changes_in_replica`)
    /// does the same; one table of cases (`Tests/Contract/field-changes.json`)
    /// holds all three to it.
    ///
    /// `at` is when it happened: the time the worker made it, but never later
    /// than when the server received it.
    public func effect(on task: TaskFacts, by personID: Int64, at: Date) -> TaskFacts {
        var after = task
        switch operation {
        case .start:
            after.status = .inProgress
            after.startedAt = task.startedAt ?? at
        case .complete:
            after.status = .completed
            after.startedAt = task.startedAt ?? at
            after.completedAt = at
            after.completedBy = personID
            after.completionNote = note ?? ""
        case .reopen:
            after.status = task.startedAt != nil ? .inProgress : task.assigneeID == nil ? .open : .assigned
            after.completedAt = nil
            after.completedBy = nil
            after.completionNote = nil
        case .claim:
            after.assigneeID = personID
            if task.status == .open { after.status = .assigned }
        case .answer:
            if let item, let value { after.answers[item] = ChecklistAnswer(value: value, by: personID, at: at) }
        case .attach:
            // A file answering a photo or signature item: the answer is the file's SHA-256.
            if let item, let blob { after.answers[item] = ChecklistAnswer(value: blob, by: personID, at: at) }
        case .checkin, .use, .time:
            // A position is not the task's; what was used and time on it are kept beside it (the master's
            // task_materials and time_entries).
            break
        }
        return after
    }

    /// When a change counts as made: the worker's time, but never later than
    /// the server received it (a device clock ahead of the server's).
    public func effectiveTime(receivedAt: Date) -> Date {
        min(madeAt, receivedAt)
    }
}
