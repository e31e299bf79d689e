/// Splits a SQL script into statements at top-level semicolons, leaving alone
/// semicolons inside quotes, quoted identifiers, dollar-quoted bodies and comments.
enum SQLScript {
    static func statements(in script: String) -> [String] {
        let chars = Array(script.unicodeScalars)
        var statements: [String] = []
        var start = 0
        var i = 0

        func text(_ from: Int, _ to: Int) -> String {
            var s = String.UnicodeScalarView()
            s.append(contentsOf: chars[from..<to])
            return String(s)
        }
        func flush(_ end: Int) {
            let statement = text(start, end)
            if !isBlank(statement) { statements.append(statement.trimmingWhitespace()) }
        }

        while i < chars.count {
            let c = chars[i]
            let next: Unicode.Scalar? = i + 1 < chars.count ? chars[i + 1] : nil
            switch c {
            case "-" where next == "-":
                while i < chars.count, chars[i] != "\n" { i += 1 }
            case "/" where next == "*":
                i += 2
                while i + 1 < chars.count, !(chars[i] == "*" && chars[i + 1] == "/") { i += 1 }
                i += 2
            case "'", "\"":
                i += 1
                while i < chars.count {
                    if chars[i] == c {
                        if i + 1 < chars.count, chars[i + 1] == c {
                            i += 2
                            continue
                        }
                        break
                    }
                    i += 1
                }
                i += 1
            case "$":
                // A dollar-quote tag: $$ or $tag$ (identifier characters only).
                var j = i + 1
                while j < chars.count, chars[j] == "_" || chars[j].properties.isAlphabetic || ("0"..."9").contains(chars[j]) {
                    j += 1
                }
                if j < chars.count, chars[j] == "$", !(j > i + 1 && ("0"..."9").contains(chars[i + 1])) {
                    let tag = Array(chars[i...j])
                    var k = j + 1
                    while k + tag.count <= chars.count, Array(chars[k..<(k + tag.count)]) != tag { k += 1 }
                    i = min(k + tag.count, chars.count)
                } else {
                    i += 1
                }
            case ";":
                flush(i)
                i += 1
                start = i
            default:
                i += 1
            }
        }
        if start < chars.count { flush(chars.count) }
        return statements
    }

    /// True when a fragment holds only whitespace and comments.
    private static func isBlank(_ fragment: String) -> Bool {
        for line in fragment.split(separator: "\n") {
            let trimmed = line.trimmingWhitespaceSubstring()
            if !trimmed.isEmpty, !trimmed.hasPrefix("--") { return false }
        }
        return true
    }
}

extension String {
    func trimmingWhitespace() -> String {
        String(Substring(self).trimmingWhitespaceSubstring())
    }
}

extension Substring {
    func trimmingWhitespaceSubstring() -> Substring {
        var s = self
        while let f = s.first, f.isWhitespace { s = s.dropFirst() }
        while let l = s.last, l.isWhitespace { s = s.dropLast() }
        return s
    }
}
