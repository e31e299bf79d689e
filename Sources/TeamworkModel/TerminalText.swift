import Foundation

/// Text from the database or the field, made safe to print on a terminal: a
/// title or a note may carry escape sequences (clear the screen, rewrite the
/// line, set the window title) or bidirectional overrides that make what is
/// shown differ from what is there. Control characters other than line breaks
/// and tabs become U+FFFD (the replacement character), so that nobody's text
/// can drive the terminal of the person reading it.
public enum TerminalText {
    public static func safe(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            scalars.append(isUnsafe(scalar) ? "\u{FFFD}" : scalar)
        }
        return String(scalars)
    }

    /// Safe and on one line: line breaks and tabs (someone's multi-line CSV
    /// title, a tab in a note) become one space each, so a field never spills
    /// onto the next line or into the next column. What every table cell,
    /// every confirmation and every one-line message prints.
    public static func inline(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isBreak) else { return safe(text) }
        var scalars = String.UnicodeScalarView()
        var last: Unicode.Scalar?
        for scalar in text.unicodeScalars {
            // \r\n is one break, one space.
            if !(scalar == "\n" && last == "\r") { scalars.append(isBreak(scalar) ? " " : scalar) }
            last = scalar
        }
        return safe(String(scalars))
    }

    /// For a log line: ``inline(_:)`` and at most `limit` characters, so that
    /// no one's text (a client's change id, say) can forge or flood a log.
    public static func oneLine(_ text: String, limit: Int = 100) -> String {
        inline(String(text.prefix(limit)))
    }

    static func isBreak(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0A, 0x0D, 0x09, 0x0B, 0x0C, 0x2028, 0x2029: true
        default: false
        }
    }

    /// JSON text with every character that could drive a terminal or mislead a
    /// reader (DEL, C1 controls, bidirectional overrides) written as `\uXXXX`:
    /// the same JSON value, safe to print. JSONEncoder escapes C0 controls
    /// itself; the others are only ever inside strings, where the escape means
    /// the same character, so a script reading the JSON gets the text as it is.
    public static func escapedJSON(_ json: Data) -> Data {
        let text = String(decoding: json, as: UTF8.self)
        guard text.unicodeScalars.contains(where: isUnsafe) else { return json }
        var escaped = ""
        escaped.reserveCapacity(json.count + 16)
        for scalar in text.unicodeScalars {
            if isUnsafe(scalar) {
                escaped +=
                    "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16)
            } else {
                escaped.unicodeScalars.append(scalar)
            }
        }
        return Data(escaped.utf8)
    }

    public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0A, 0x09: false
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
