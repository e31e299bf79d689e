import Foundation

/// Markup built by string interpolation that escapes by default: an interpolated
/// `String` (a title, a note, a name: anyone's text) is always escaped, only an
/// interpolated ``HTML`` goes in as markup. So no page (the board's, the map a
/// manager writes with `map --html`) can put someone's text into its markup by
/// forgetting to escape it.
public struct HTML: ExpressibleByStringInterpolation, Sendable {
    public private(set) var text: String

    public init(stringLiteral value: String) { text = value }
    public init(stringInterpolation: Interpolation) { text = stringInterpolation.text }
    private init(markup: String) { text = markup }

    public static let empty = HTML(stringLiteral: "")

    /// Markup made by the caller from its own constants (never from anyone's text).
    public static func trusted(_ markup: String) -> HTML { HTML(markup: markup) }

    public struct Interpolation: StringInterpolationProtocol {
        var text = ""
        public init(literalCapacity: Int, interpolationCount: Int) { text.reserveCapacity(literalCapacity + 16 * interpolationCount) }
        public mutating func appendLiteral(_ literal: String) { text += literal }
        public mutating func appendInterpolation(_ value: String) { text += HTML.escape(value) }
        public mutating func appendInterpolation(_ value: String?) { text += HTML.escape(value ?? "") }
        public mutating func appendInterpolation(_ value: HTML) { text += value.text }
        public mutating func appendInterpolation(_ values: [HTML]) { for value in values { text += value.text } }
        public mutating func appendInterpolation<I: BinaryInteger>(_ value: I) { text += String(value) }
    }

    /// Text as it may stand in an element or a quoted attribute.
    /// Works on Unicode scalars, not characters: a `"` followed by a combining mark is one
    /// character that equals no `"`, yet the browser reads the quote.
    public static func escape(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == 0x26 || $0 == 0x3C || $0 == 0x3E || $0 == 0x22 || $0 == 0x27 }) else { return value }
        var out = String.UnicodeScalarView()
        for scalar in value.unicodeScalars {
            switch scalar {
            case "&": out.append(contentsOf: "&amp;".unicodeScalars)
            case "<": out.append(contentsOf: "&lt;".unicodeScalars)
            case ">": out.append(contentsOf: "&gt;".unicodeScalars)
            case "\"": out.append(contentsOf: "&quot;".unicodeScalars)
            case "'": out.append(contentsOf: "&#39;".unicodeScalars)
            default: out.append(scalar)
            }
        }
        return String(out)
    }

    /// JSON for a `<script type="application/json">` block: `<`, `>` and `&` as
    /// `\u` escapes, so no text in it can close the element or open a comment.
    public static func scriptJSON(_ data: Data) -> HTML {
        // One pass over the bytes (a day's map is some 200 KB: five string replacements took 80 ms).
        let bytes = [UInt8](data)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count + 64)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case 0x3C: out += Array("\\u003c".utf8)
            case 0x3E: out += Array("\\u003e".utf8)
            case 0x26: out += Array("\\u0026".utf8)
            case 0xE2 where index + 2 < bytes.count && bytes[index + 1] == 0x80 && (bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9):
                // U+2028 and U+2029 end a line in older JavaScript.
                out += Array((bytes[index + 2] == 0xA8 ? "\\u2028" : "\\u2029").utf8)
                index += 2
            default: out.append(byte)
            }
            index += 1
        }
        return HTML(markup: String(decoding: out, as: UTF8.self))
    }
}
