/// The error a person is told about, from every library: a machine-readable code and a
/// message fit to show a user (the command-line tools map the code to an exit status; the
/// HTTP edge to a status, docs/architecture.md "Errors"). Messages never contain secrets or
/// personal data (no emails, no query values): they name the field or the id instead.
public struct TeamworkError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is; the CLI maps each code to its own exit status.
    public enum Code: String, Sendable, Equatable, CaseIterable {
        /// Arguments that do not make sense together.
        case usage
        /// Data that fails validation: an empty name, a bad date, a coordinate out of range.
        case invalidInput
        /// An input file that cannot be read.
        case unreadableFile
        /// An output file that cannot be created or written (EX_CANTCREAT).
        case cannotWrite
        /// An id, slug or email that matches nothing.
        case notFound
        /// A duplicate, a stale version, or a row that is still referenced.
        case conflict
        /// The database cannot be reached.
        case unavailable
        /// Configuration that cannot work: a malformed database URL, missing server binaries.
        case configuration
        /// A failure that is nobody's fault but ours.
        case `internal`
    }

    public var code: Code
    public var message: String
    /// A rule a manager may override for one change (a missing skill): each tool says how
    /// (`--force`, the board's "assign anyway"), in its own words.
    public var overridable = false

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    public static func invalid(_ message: String) -> TeamworkError { .init(.invalidInput, message) }
    public static func notFound(_ message: String) -> TeamworkError { .init(.notFound, message) }
    public static func conflict(_ message: String) -> TeamworkError { .init(.conflict, message) }
}

extension TeamworkError.Code {
    /// The tools' documented exit status for this kind of failure.
    public var exitStatus: Int32 {
        switch self {
        case .usage: 64
        case .invalidInput: 65
        case .unreadableFile: 66
        case .cannotWrite: 73
        case .notFound: 67
        case .conflict: 68
        case .unavailable: 69
        case .configuration: 78
        case .internal: 1
        }
    }
}
