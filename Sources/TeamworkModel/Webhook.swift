import Foundation

/// What a webhook subscription may hear of (docs/integrations.md).
public enum WebhookEvent: String, Sendable, Codable, CaseIterable {
    case taskCreated = "task.created"
    case taskAssigned = "task.assigned"
    case taskStarted = "task.started"
    case taskCompleted = "task.completed"
    case taskCancelled = "task.cancelled"
    case taskRescheduled = "task.rescheduled"
    case attachmentAdded = "attachment.added"
    case checklistCompleted = "checklist.completed"
    case appointmentConfirmed = "appointment.confirmed"
    case appointmentMoved = "appointment.moved"
    case appointmentCancelled = "appointment.cancelled"
    /// What a completed job cost: the materials used, priced, with totals (sql/functions/teamwork_task_costs.sql).
    case taskCosted = "task.costed"

    public static func parse(_ text: String) throws -> WebhookEvent {
        guard let event = WebhookEvent(rawValue: text) else {
            throw TeamworkError.invalid(
                "no event '\(TerminalText.inline(text))'; the events are \(allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return event
    }
}

/// A system that hears of events by HTTP POST. Its secret is shown once, when made or rotated.
public struct WebhookSubscription: Sendable, Codable, Equatable, Identifiable {
    public var id: Int64
    public var url: String
    public var events: [WebhookEvent]
    public var description: String
    /// The start of the hex SHA-256 of its secret: how a receiver's operator checks they hold the
    /// current one (`printf %s "$SECRET" | sha256sum | cut -c1-16`); the secret itself is shown once.
    public var secretFingerprint: String
    /// Until when the secret before the last rotation is still signed with, beside the new one.
    public var previousUntil: Date?
    /// Attempts in a row that failed; a delivery that succeeds sets it back to 0.
    public var failures: Int
    public var pausedAt: Date?
    public var pausedReason: String?
    public var createdAt: Date
    /// When its secret was last rotated, and by whom (a person's id; nil when not known).
    public var rotatedAt: Date?
    public var rotatedBy: Int64?

    public init(
        id: Int64, url: String, events: [WebhookEvent], description: String, secretFingerprint: String, previousUntil: Date?,
        failures: Int, pausedAt: Date?, pausedReason: String?, createdAt: Date, rotatedAt: Date? = nil, rotatedBy: Int64? = nil
    ) {
        self.rotatedAt = rotatedAt
        self.rotatedBy = rotatedBy
        self.id = id
        self.url = url
        self.events = events
        self.description = description
        self.secretFingerprint = secretFingerprint
        self.previousUntil = previousUntil
        self.failures = failures
        self.pausedAt = pausedAt
        self.pausedReason = pausedReason
        self.createdAt = createdAt
    }

    /// An `http(s)` address with a host, at most 2000 bytes, without credentials in it.
    public static func validURL(_ text: String) throws -> URL {
        guard text.utf8.count <= 2000, let url = URL(string: text), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty, url.user == nil, url.password == nil
        else { throw TeamworkError.invalid("a webhook's url is an http(s) address with a host, like https://billing.example/hooks") }
        return url
    }
}

/// One event on its way to one subscription.
public struct WebhookDelivery: Sendable, Codable, Equatable, Identifiable {
    public enum State: String, Sendable, Codable {
        case pending, delivered, failed
    }

    public var id: Int64
    /// The event's stable id: the `webhook-id` every attempt carries (`evt_<id>`).
    public var eventID: Int64
    public var subscriptionID: Int64
    public var event: String
    public var taskID: Int64?
    public var state: State
    public var attempts: Int
    public var nextAttemptAt: Date
    public var lastStatus: Int?
    public var lastError: String?
    public var deliveredAt: Date?
    public var createdAt: Date

    public init(
        id: Int64, eventID: Int64, subscriptionID: Int64, event: String, taskID: Int64?, state: State, attempts: Int,
        nextAttemptAt: Date, lastStatus: Int?, lastError: String?, deliveredAt: Date?, createdAt: Date
    ) {
        self.id = id
        self.eventID = eventID
        self.subscriptionID = subscriptionID
        self.event = event
        self.taskID = taskID
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.deliveredAt = deliveredAt
        self.createdAt = createdAt
    }

    /// The `webhook-id` of an event: the same on every attempt, so a receiver drops a repeat.
    public static func messageID(_ eventID: Int64) -> String { "evt_\(eventID)" }
}
