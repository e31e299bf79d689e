import CommandLineSupport
import Foundation
import TeamworkModel

/// Plain-text tables and JSON for the commands' output.
enum Output {
    /// Prints `value` as pretty, key-sorted JSON with snake_case keys and ISO 8601 dates.
    static func json<T: Encodable>(_ value: T) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        encoder.keyEncodingStrategy = .convertToSnakeCase
        write(TerminalText.escapedJSON(try encoder.encode(value)) + Data("\n".utf8), to: STDOUT_FILENO)
    }

    /// One line of text; control characters in it cannot reach the terminal (see `TerminalText`).
    static func line(_ text: String = "") {
        write(Data((TerminalText.safe(text) + "\n").utf8), to: STDOUT_FILENO)
    }

    /// A note on standard error about what the tool did on the user's behalf.
    static func announce(_ message: String) {
        CommandRunner.say(message, tool: "teamwork-manager")
    }

    static func write(_ data: Data, to descriptor: Int32) {
        CommandRunner.write(data, to: descriptor)
    }

    /// Left-aligned columns separated by two spaces; cells longer than
    /// `maxWidth` are cut with an ellipsis (`show` prints the full text).
    static func table(_ headers: [String], _ rows: [[String]], maxWidth: Int = 40) {
        let cut = rows.map { row in
            row.map { cell -> String in
                let flat = cell.replacingOccurrences(of: "\n", with: " ")
                return flat.count > maxWidth ? String(flat.prefix(maxWidth - 1)) + "…" : flat
            }
        }
        var widths = headers.map(\.count)
        for row in cut {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        func render(_ cells: [String]) -> String {
            var parts: [String] = []
            for (index, cell) in cells.enumerated() {
                let isLast = index == cells.count - 1
                parts.append(isLast ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0))
            }
            return parts.joined(separator: "  ")
        }
        line(render(headers))
        for row in cut { line(render(row)) }
    }

    /// `key: value` lines with the keys aligned.
    static func details(_ pairs: [(String, String)]) {
        let width = pairs.map(\.0.count).max() ?? 0
        for (key, value) in pairs {
            line((key + ":").padding(toLength: width + 1, withPad: " ", startingAt: 0) + " " + value)
        }
    }

    static func date(_ date: Date?) -> String {
        date.map(ISODate.format) ?? "-"
    }

    /// A due date for tables: the day, plus the time when it is not the end of the day.
    static func due(_ date: Date?) -> String {
        guard let date else { return "-" }
        let text = ISODate.format(date)
        return text.hasSuffix("T23:59:59Z") ? String(text.prefix(10)) : text
    }
}
