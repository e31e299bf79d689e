import Foundation
import TeamworkModel

/// A CSV file (RFC 4180: commas, double-quoted fields, `""` for a quote, line
/// breaks inside quotes) read into a header and records that remember the line
/// they started on, so errors can point at it.
public struct CSVTable: Sendable, Equatable {
    public struct Record: Sendable, Equatable {
        /// 1-based line number in the file where the record starts.
        public var line: Int
        public var fields: [String]
    }

    public var header: [String]
    public var records: [Record]

    public init(parsing text: String) throws {
        var records: [Record] = []
        var fields: [String] = []
        var field = ""
        var line = 1
        var recordLine = 1
        var inQuotes = false
        var fieldWasQuoted = false
        var iterator = text.unicodeScalars.makeIterator()
        var pending: Unicode.Scalar? = iterator.next()

        func endRecord() {
            fields.append(field)
            // Skip blank lines entirely.
            if !(fields.count == 1 && fields[0].isEmpty && !fieldWasQuoted) {
                records.append(Record(line: recordLine, fields: fields))
            }
            fields = []
            field = ""
            fieldWasQuoted = false
        }

        while let c = pending {
            pending = iterator.next()
            if inQuotes {
                if c == "\"" {
                    if pending == "\"" {
                        field.unicodeScalars.append("\"")
                        pending = iterator.next()
                    } else {
                        inQuotes = false
                    }
                } else {
                    if c == "\n" { line += 1 }
                    field.unicodeScalars.append(c)
                }
                continue
            }
            switch c {
            case "\"":
                guard field.isEmpty else {
                    throw CSVError(line: line, message: "a quote inside an unquoted field; quote the whole field")
                }
                inQuotes = true
                fieldWasQuoted = true
            case ",":
                fields.append(field)
                field = ""
                fieldWasQuoted = false
            case "\r":
                if pending == "\n" { continue }
                endRecord()
                line += 1
                recordLine = line
            case "\n":
                endRecord()
                line += 1
                recordLine = line
            default:
                if fieldWasQuoted {
                    throw CSVError(line: line, message: "text after a closing quote")
                }
                field.unicodeScalars.append(c)
            }
        }
        if inQuotes {
            throw CSVError(line: recordLine, message: "a quoted field is never closed")
        }
        if !field.isEmpty || !fields.isEmpty || fieldWasQuoted { endRecord() }

        guard let first = records.first else {
            throw CSVError(line: 1, message: "the file is empty; it needs a header line")
        }
        header = first.fields.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        if let bom = header.first, bom.hasPrefix("\u{FEFF}") { header[0] = String(bom.dropFirst()) }
        self.records = Array(records.dropFirst())
        for record in self.records where record.fields.count != header.count {
            throw CSVError(line: record.line, message: "has \(record.fields.count) fields, the header has \(header.count)")
        }
    }
}

extension CSVTable {
    /// Rows as RFC 4180 CSV (CRLF line ends, fields quoted when they hold a comma, a quote or a
    /// line break). A field a spreadsheet would run as a formula (starting with =, +, -, @, a tab
    /// or a carriage return, and not a plain number) gets a leading ' so it shows as text: a
    /// worker's answer must not become a formula on a manager's machine.
    public static func render(_ rows: [[String]]) -> String {
        rows.map { row in row.map(field).joined(separator: ",") + "\r\n" }.joined()
    }

    static func field(_ value: String) -> String {
        var text = value
        if let first = text.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first),
            text.range(of: #"^-?[0-9]+(\.[0-9]+)?$"#, options: .regularExpression) == nil
        {
            text = "'" + text
        }
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// A CSV file that cannot be read as a table.
public struct CSVError: Error, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var message: String

    public init(line: Int, message: String) {
        self.line = line
        self.message = message
    }

    public var description: String { "line \(line): \(message)" }
}
