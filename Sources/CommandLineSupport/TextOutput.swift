import Foundation
import TeamworkModel

#if canImport(Glibc)
    import Glibc
#endif

/// How every tool prints text for people: one line is one line (``TerminalText/inline(_:)``:
/// no one's text can break it or drive the terminal), tables have a header
/// and aligned columns, details have aligned keys and indent a multi-line value.
public enum TextOutput {
    /// One line on standard output.
    public static func line(_ text: String = "") {
        CommandRunner.write(Data((TerminalText.inline(text) + "\n").utf8), to: STDOUT_FILENO)
    }

    /// Left-aligned columns under a header, separated by two spaces; cells
    /// longer than `maxWidth` are cut with an ellipsis (`show` prints the full text).
    public static func table(_ headers: [String], _ rows: [[String]], maxWidth: Int = 40) {
        let cut = rows.map { row in
            row.map { cell -> String in
                let flat = TerminalText.inline(cell)
                return flat.count > maxWidth ? String(flat.prefix(maxWidth - 1)) + "…" : flat
            }
        }
        var widths = headers.map(\.count)
        for row in cut {
            for (index, cell) in row.enumerated() where index < widths.count { widths[index] = max(widths[index], cell.count) }
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

    /// `key: value` lines with the keys aligned. A value of several lines (a
    /// description, a note) keeps them, each indented under the first.
    public static func details(_ pairs: [(String, String)]) {
        let width = (pairs.map(\.0.count).max() ?? 0) + 2
        for (key, value) in pairs {
            let lines = value.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
            let first = lines.first.map(String.init) ?? ""
            line((key + ":").padding(toLength: width, withPad: " ", startingAt: 0) + first)
            for more in lines.dropFirst() { line(String(repeating: " ", count: width) + more) }
        }
    }
}
