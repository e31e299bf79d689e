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

    /// For a log line: safe, on one line, and at most `limit` characters, so that
    /// no one's text (a client's change id, say) can forge or flood a log.
    public static func oneLine(_ text: String, limit: Int = 100) -> String {
        safe(String(text.prefix(limit))).replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\t", with: " ")
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
                escaped += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16)
            } else {
                escaped.unicodeScalars.append(scalar)
            }
        }
        return Data(escaped.utf8)
    }

    static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0A, 0x09: false
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
