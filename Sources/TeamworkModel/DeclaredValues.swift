import Foundation

/// What a manager gives the columns the declaration lets them set by name (``TaskColumn/manager``), checked:
/// the command line's `--set NAME=VALUE`, the board's task page and a task import's columns all come here.
public struct DeclaredValues: Sendable, Equatable {
    /// By column name; `.text(nil)` clears.
    private var values: [String: TaskValue] = [:]

    public init() {}

    /// From `NAME=VALUE` each (`--set`); an empty value clears the column.
    public init(assignments: [String]) throws {
        for assignment in assignments {
            guard let equals = assignment.firstIndex(of: "=") else {
                throw TeamworkError.invalid("--set takes NAME=VALUE, like reference=WO-1182 (an empty value clears it)")
            }
            try set(String(assignment[..<equals]), to: String(assignment[assignment.index(after: equals)...]))
        }
    }

    /// What `--set` takes, for a command's help: each column set by name and its rule.
    public static var help: String {
        let columns = settable.map { column in
            switch column.manager! {
            case .line(let bytes): "\(column.name) (one line, at most \(bytes) bytes)"
            }
        }
        return "A column set by name, NAME=VALUE (repeatable; an empty value clears it): \(columns.joined(separator: ", "))."
    }

    /// The columns a manager sets by name, in the declaration's order.
    public static var settable: [TaskColumn] { TaskSchema.columns.filter { $0.manager != nil } }

    /// Gives column `name` the value `text` (empty clears it). An unknown name, or a value its setting refuses, throws.
    public mutating func set(_ name: String, to text: String) throws {
        guard let column = Self.settable.first(where: { $0.name == name }) else {
            let names = Self.settable.map(\.name).joined(separator: ", ")
            throw TeamworkError.invalid("'\(TerminalText.inline(name))' is not a column set by name; they are: \(names)")
        }
        switch column.manager! {
        case .line(let bytes):
            let line = text.trimmingCharacters(in: .whitespaces)
            guard !line.unicodeScalars.contains(where: Self.breaksALine) else {
                throw TeamworkError.invalid("\(name) is one line of text, without control or invisible formatting characters")
            }
            guard line.utf8.count <= bytes else { throw TeamworkError.invalid("\(name) has at most \(bytes) bytes") }
            values[name] = .text(line.isEmpty ? nil : line)
        }
    }

    public var isEmpty: Bool { values.isEmpty }

    /// What a line of text never holds: controls (C0, C1, DEL), line and paragraph separators (U+2028, U+2029), and
    /// the invisible formatting characters (bidirectional overrides, zero-width ones) that make a text read as
    /// another. The master holds the same rule (sql/0053).
    static func breaksALine(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }

    /// Each column given a value, in the declaration's order.
    public var ordered: [(column: TaskColumn, value: TaskValue)] {
        Self.settable.compactMap { column in values[column.name].map { (column, $0) } }
    }
}
