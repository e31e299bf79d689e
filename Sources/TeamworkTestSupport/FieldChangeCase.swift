import Foundation
import TeamworkModel

/// One case of `Tests/Contract/field-changes.json`: what one worker change does
/// to one task, at the sync endpoint (and so on the device and in the replica)
/// and on the master. People are `me` (who makes the change) and `other`.
public struct FieldChangeCase: Sendable, Decodable, CustomStringConvertible {
    /// A task's field-work state, with people by role.
    public struct Task: Sendable, Decodable, Equatable {
        public var status: TaskStatus
        public var assignee: Who?
        public var startedAt: Date?
        public var completedAt: Date?
        public var completedBy: Who?
        public var completionNote: String?
        /// The latest answer to each checklist item (keys without underscores: the decoder's
        /// snake_case strategy would rename them); none when absent.
        public var answers: [String: Answer]?
        /// What was used on it (the master's task_materials; a device keeps none): compared on the
        /// master only, none when absent.
        public var materials: [Material]?
        /// Time on it (the master's time_entries): compared on the master only, and only when the
        /// case says (a start or a completion also moves the master's automatic entries).
        public var time: [TimeLine]?
    }

    /// One entry of time on the task: the kind, from when to when (no end: still running), who,
    /// and where it came from (`worker` unless said).
    public struct TimeLine: Sendable, Decodable, Equatable, Hashable {
        public var kind: String
        public var start: Date
        public var end: Date?
        public var by: Who
        public var source: String?
        /// When an entry the task starts with was recorded (by default its start).
        public var recordedAt: Date?

        public init(kind: String, start: Date, end: Date?, by: Who, source: String?) {
            (self.kind, self.start, self.end, self.by, self.source) = (kind, start, end, by, source)
        }
    }

    /// One line of what was used: a part's code or a line's description, the quantity, who.
    public struct Material: Sendable, Decodable, Equatable, Hashable {
        public var part: String?
        public var description: String?
        public var quantity: String
        public var by: Who
        /// When a line the task starts with was recorded (by default ``FieldChangeCase/answeredBefore``).
        public var recordedAt: Date?

        public init(part: String?, description: String?, quantity: String, by: Who, recordedAt: Date? = nil) {
            (self.part, self.description, self.quantity, self.by, self.recordedAt) = (part, description, quantity, by, recordedAt)
        }
    }

    public struct Answer: Sendable, Decodable, Equatable {
        public var value: String
        public var by: Who
    }

    public enum Who: String, Sendable, Decodable, Hashable {
        case me, other

        /// The person's id, given who `me` and `other` are.
        public func id(me: Int64, other: Int64) -> Int64 { self == .me ? me : other }
    }

    public struct Change: Sendable, Decodable {
        public var operation: String
        public var note: String?
        public var madeAt: Date
        public var item: String?
        public var value: String?
        public var blob: String?
        public var size: Int64?
        public var mediaType: String?
        public var signer: String?
    }

    public struct MasterVerdict: Sendable, Decodable {
        public var applied: Bool
        public var conflict: String?
    }

    public var name: String
    /// The skills `me` has; the task requires `climbing`.
    public var skills: [String]
    /// A team's replica (else a person's).
    public var inTeam: Bool
    /// The items of the checklist the task carries (version 1 of checklist "contract"), if any.
    public var checklist: [ChecklistItem]?
    public var before: Task
    public var change: Change
    public var endpointAccepts: Bool
    public var master: MasterVerdict
    /// The task after the change, wherever it was taken.
    public var after: Task
    public var whyTheyDiffer: String?

    public static let requiredSkills = ["climbing"]
    /// The server receives each change this long after it was made.
    public static let deliveryDelay: TimeInterval = 1

    public var description: String { name }

    /// The one file every side is tested against (the phone app's rules read it whole).
    public static let tableURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appending(path: "../../Tests/Contract/field-changes.json").standardizedFileURL

    /// Every case, from the one file both sides are tested against.
    public static func all() throws -> [FieldChangeCase] {
        struct File: Decodable { var cases: [FieldChangeCase] }
        let url = tableURL
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(File.self, from: Data(contentsOf: url)).cases
    }
}

extension FieldChangeCase {
    /// The checklist the task carries, as a form.
    public var form: ChecklistForm? { checklist.map { ChecklistForm(name: "contract", version: 1, items: $0) } }

    /// `task`'s answers with people's ids; each answered at `at` unless it is the one this case's
    /// change gives (answered when the change counts as made).
    public func answers(_ task: Task, me: Int64, other: Int64, changedAt: Date?) -> [String: ChecklistAnswer] {
        (task.answers ?? [:]).reduce(into: [:]) { answers, entry in
            let fresh = entry.key == change.item && entry.value.value == (change.value ?? change.blob) && changedAt != nil
            answers[entry.key] = ChecklistAnswer(
                value: entry.value.value, by: entry.value.by.id(me: me, other: other),
                at: fresh ? changedAt! : Self.answeredBefore)
        }
    }

    /// When the answers a case's task starts with were given.
    public static let answeredBefore = Date(timeIntervalSince1970: 1_763_600_000)
}
