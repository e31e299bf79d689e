import Foundation

/// What a person does in Teamwork.
public enum Role: String, Sendable, Codable, CaseIterable {
    case manager, worker, admin
}

/// How urgent a task is. Ordered: `urgent` is the highest.
public enum Priority: String, Sendable, Codable, CaseIterable, Comparable {
    case low, normal, high, urgent

    /// Higher numbers sort first when listing work.
    public var rank: Int {
        switch self {
        case .low: 0
        case .normal: 1
        case .high: 2
        case .urgent: 3
        }
    }

    public static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.rank < rhs.rank }
}

/// Where a task stands. `open` and `assigned` follow the assignee: a task with
/// an assignee that has not been started is `assigned`, without one it is `open`.
public enum TaskStatus: String, Sendable, Codable, CaseIterable {
    case open
    case assigned
    case inProgress = "in_progress"
    case completed
    case cancelled

    /// Completed and cancelled tasks need no more work.
    public var isClosed: Bool { self == .completed || self == .cancelled }
}

/// A location is either the site of a task or one person's last-known position.
public enum LocationKind: String, Sendable, Codable, CaseIterable {
    case site, person
}

extension Role {
    /// Parses a user-typed value, naming the accepted values when it fails.
    public static func parse(_ text: String) throws -> Role {
        try parseEnum(text, field: "role")
    }
}

extension Priority {
    public static func parse(_ text: String) throws -> Priority {
        try parseEnum(text, field: "priority")
    }
}

extension TaskStatus {
    /// The status as people read it: `in progress`.
    public var words: String { rawValue.replacingOccurrences(of: "_", with: " ") }

    public static func parse(_ text: String) throws -> TaskStatus {
        try parseEnum(text.replacingOccurrences(of: "-", with: "_"), field: "status")
    }
}

func parseEnum<E: RawRepresentable & CaseIterable>(_ text: String, field: String) throws -> E where E.RawValue == String {
    let normalized = text.trimmingCharacters(in: .whitespaces).lowercased()
    if let value = E(rawValue: normalized) { return value }
    let accepted = E.allCases.map(\.rawValue).joined(separator: ", ")
    throw TeamworkError.invalid("\(field) must be one of: \(accepted)")
}
