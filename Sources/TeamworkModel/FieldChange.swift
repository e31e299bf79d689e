import Foundation

/// One worker change as the event listener reads it from a replica's
/// `worker_changes` and hands it to the master. Times are milliseconds since 1970.
public struct RecordedWorkerChange: Sendable, Codable, Equatable {
    /// The change's position in its replica file.
    public var position: Int64
    public var changeID: String
    public var personID: Int64
    public var taskID: Int64?
    /// `start`, `complete`, `reopen`, `claim`, `checkin` or `answer`.
    public var operation: String
    public var note: String?
    public var madeAt: Int64
    public var receivedAt: Int64
    public var latitude: Double?
    public var longitude: Double?
    /// Why the sync endpoint refused it, `nil` when it was accepted.
    public var rejection: String?
    /// For an answer: the checklist item and the value given.
    public var item: String?
    public var value: String?
    /// For an attachment: the file's SHA-256, size, type and, for a signature, who signed.
    public var blob: String?
    public var size: Int64?
    public var mediaType: String?
    public var signer: String?

    public init(
        position: Int64, changeID: String, personID: Int64, taskID: Int64?, operation: String, note: String?,
        madeAt: Int64, receivedAt: Int64, latitude: Double? = nil, longitude: Double? = nil, rejection: String? = nil,
        item: String? = nil, value: String? = nil, blob: String? = nil, size: Int64? = nil, mediaType: String? = nil,
        signer: String? = nil
    ) {
        self.blob = blob
        self.size = size
        self.mediaType = mediaType
        self.signer = signer
        self.item = item
        self.value = value
        self.position = position
        self.changeID = changeID
        self.personID = personID
        self.taskID = taskID
        self.operation = operation
        self.note = note
        self.madeAt = madeAt
        self.receivedAt = receivedAt
        self.latitude = latitude
        self.longitude = longitude
        self.rejection = rejection
    }

    enum CodingKeys: String, CodingKey {
        case position
        case changeID = "change_id"
        case personID = "person_id"
        case taskID = "task_id"
        case operation, note
        case madeAt = "made_at"
        case receivedAt = "received_at"
        case latitude, longitude, rejection, item, value
        case blob, size
        case mediaType = "media_type"
        case signer
    }
}

/// A worker change the master did not take although a replica had shown it:
/// carried by the generator into that replica's `refusals` (and so to the
/// devices) together with the master's view of the task.
public struct FieldRefusal: Sendable, Equatable {
    /// The ledger entry.
    public var id: Int64
    /// `team-12` or `person-5`: where the change came from.
    public var replica: String
    public var personID: Int64
    public var changeID: String
    public var taskID: Int64?
    public var operation: String
    /// The ledger's rule: cancelled, claimed_by_other, missing_skills, invalid, ...
    public var rule: String
    /// Why, in words for the worker.
    public var reason: String
    public var decidedAt: Date
    /// The dispatcher's dismissal, with the reason written for the worker ("dismissed: ..."); nil until then.
    public var decision: String?

    public init(
        id: Int64, replica: String, personID: Int64, changeID: String, taskID: Int64?, operation: String, rule: String,
        reason: String, decidedAt: Date, decision: String? = nil
    ) {
        (self.id, self.replica, self.personID, self.changeID, self.taskID) = (id, replica, personID, changeID, taskID)
        (self.operation, self.rule, self.reason, self.decidedAt, self.decision) = (operation, rule, reason, decidedAt, decision)
    }
}

/// What the master made of one worker change.
public struct FieldChangeOutcome: Sendable, Equatable {
    public var changeID: String
    public var taskID: Int64?
    /// The master changed as the worker asked.
    public var applied: Bool
    /// The conflict rule that decided it, if any (see ``FieldConflict``).
    public var conflict: String?

    public init(changeID: String, taskID: Int64?, applied: Bool, conflict: String?) {
        self.changeID = changeID
        self.taskID = taskID
        self.applied = applied
        self.conflict = conflict
    }
}

/// A worker change the master could not take as it was, kept for managers
/// until one of them marks it resolved.
public struct FieldConflict: Sendable, Codable, Equatable {
    public var id: Int64
    /// The rule: rejected, deleted, cancelled, moved, reassigned, already_completed,
    /// not_completed, claimed_by_other, not_a_member or invalid (the master could not take it at all).
    public var rule: String
    /// Whether the change was applied anyway (a completion of a moved or reassigned task).
    public var applied: Bool
    public var detail: String?
    public var replica: String
    public var changeID: String
    public var personID: Int64
    public var personName: String?
    public var taskID: Int64?
    public var taskTitle: String?
    public var operation: String
    public var note: String?
    public var madeAt: Date
    public var recordedAt: Date
    public var resolvedAt: Date?
    public var resolvedBy: Int64?
    public var resolution: String?

    public init(
        id: Int64, rule: String, applied: Bool, detail: String?, replica: String, changeID: String, personID: Int64,
        personName: String?, taskID: Int64?, taskTitle: String?, operation: String, note: String?, madeAt: Date,
        recordedAt: Date, resolvedAt: Date?, resolvedBy: Int64?, resolution: String?
    ) {
        self.id = id
        self.rule = rule
        self.applied = applied
        self.detail = detail
        self.replica = replica
        self.changeID = changeID
        self.personID = personID
        self.personName = personName
        self.taskID = taskID
        self.taskTitle = taskTitle
        self.operation = operation
        self.note = note
        self.madeAt = madeAt
        self.recordedAt = recordedAt
        self.resolvedAt = resolvedAt
        self.resolvedBy = resolvedBy
        self.resolution = resolution
    }
}

/// Where the listener stands with one replica.
public struct ListenerCursor: Sendable, Equatable {
    public var position: Int64
    /// The change at `position`, to notice a file whose positions restarted.
    public var changeID: String?

    public static let start = ListenerCursor(position: 0, changeID: nil)

    public init(position: Int64, changeID: String?) {
        self.position = position
        self.changeID = changeID
    }
}

extension FieldConflict {
    /// What accepting it did, in one line (the manager's tool and the board say the same).
    public func accepted(taskID: Int64) -> String {
        let who = personName ?? String(personID)
        switch operation {
        case "use": return "Task \(taskID): what \(who) used is recorded as they gave it (conflict \(id))"
        case "time": return "Task \(taskID): \(who)'s time is recorded as they gave it (conflict \(id))"
        default: return "Task \(taskID) completed as done by \(who) (conflict \(id))"
        }
    }
}
