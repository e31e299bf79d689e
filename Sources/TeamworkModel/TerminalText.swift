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

    static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0A, 0x09: false
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
