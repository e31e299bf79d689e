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

    /// One line of text (see `TextOutput`): nobody's text breaks it or drives the terminal.
    static func line(_ text: String = "") {
        TextOutput.line(text)
    }

    /// A note on standard error about what the tool did on the user's behalf.
    static func announce(_ message: String) {
        CommandRunner.say(message, tool: "teamwork-manager")
    }

    static func write(_ data: Data, to descriptor: Int32) {
        CommandRunner.write(data, to: descriptor)
    }

    /// A table with a header and aligned columns (see `TextOutput`).
    static func table(_ headers: [String], _ rows: [[String]], maxWidth: Int = 40) {
        TextOutput.table(headers, rows, maxWidth: maxWidth)
    }

    /// `key: value` lines with the keys aligned (see `TextOutput`).
    static func details(_ pairs: [(String, String)]) {
        TextOutput.details(pairs)
    }

    /// An instant as a person in `zone` reads it: `2026-12-01 09:00 CET`.
    static func date(_ date: Date?, in zone: Zone = .utc, withZone: Bool = true) -> String {
        date.map { zone.format($0, withZone: withZone) } ?? "-"
    }

    /// A due date for tables: the day in `zone`, plus the time when it is not the end of that day.
    static func due(_ date: Date?, in zone: Zone = .utc, withZone: Bool = true) -> String {
        guard let date else { return "-" }
        let day = zone.date(of: date)
        return zone.endOfDay(day) == date ? day.description : zone.format(date, withZone: withZone)
    }

}

extension Output {
    /// The text of a CSV file a command imports: one clear line when it is missing, unreadable or
    /// not UTF-8.
    static func readCSVFile(_ file: String) throws -> String {
        guard FileManager.default.fileExists(atPath: file) else { throw TeamworkError(.unreadableFile, "no file \(file)") }
        guard let data = FileManager.default.contents(atPath: file) else {
            throw TeamworkError(.unreadableFile, "cannot read \(file): permission denied or not a file")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw TeamworkError(.unreadableFile, "cannot read \(file) as UTF-8 text")
        }
        return text
    }
}
