import Foundation

/// Markup built by string interpolation that escapes by default: an interpolated
/// `String` (a title, a note, a name: anyone's text) is always escaped, only an
/// interpolated ``HTML`` goes in as markup. So no page of the board can put
/// someone's text into its markup by forgetting to escape it.
struct HTML: ExpressibleByStringInterpolation, Sendable {
    private(set) var text: String

    init(stringLiteral value: String) { text = value }
    init(stringInterpolation: Interpolation) { text = stringInterpolation.text }
    private init(markup: String) { text = markup }

    static let empty = HTML(stringLiteral: "")

    /// Markup made by this module from its own constants (a script's JSON data, made safe by its caller).
    static func trusted(_ markup: String) -> HTML { HTML(markup: markup) }

    struct Interpolation: StringInterpolationProtocol {
        var text = ""
        init(literalCapacity: Int, interpolationCount: Int) { text.reserveCapacity(literalCapacity + 16 * interpolationCount) }
        mutating func appendLiteral(_ literal: String) { text += literal }
        mutating func appendInterpolation(_ value: String) { text += HTML.escape(value) }
        mutating func appendInterpolation(_ value: String?) { text += HTML.escape(value ?? "") }
        mutating func appendInterpolation(_ value: HTML) { text += value.text }
        mutating func appendInterpolation(_ values: [HTML]) { for value in values { text += value.text } }
        mutating func appendInterpolation<I: BinaryInteger>(_ value: I) { text += String(value) }
    }

    /// Text as it may stand in an element or a quoted attribute.
    /// Works on Unicode scalars, not characters: a `"` followed by a combining mark is one
    /// character that equals no `"`, yet the browser reads the quote.
    static func escape(_ value: String) -> String {
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
    static func scriptJSON(_ data: Data) -> HTML {
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

/// `application/x-www-form-urlencoded` fields (a form's body, a query string), by name.
struct FormFields: Sendable {
    private(set) var pairs: [(name: String, value: String)] = []

    /// Fields of `text`; a field that is not valid percent-encoded UTF-8 makes the whole thing unreadable.
    init?(_ text: Substring) {
        for part in text.split(separator: "&", omittingEmptySubsequences: true) {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(pieces[0]), let value = Self.decode(pieces.count > 1 ? pieces[1] : "") else { return nil }
            pairs.append((name, value))
        }
    }

    subscript(_ name: String) -> String? { pairs.first { $0.name == name }?.value }
    func all(_ name: String) -> [String] { pairs.filter { $0.name == name }.map(\.value) }

    private static func decode(_ text: Substring) -> String? {
        String(text).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    /// A query value written for a link.
    static func encode(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// `name=value&…` for a link's query.
    static func query(_ fields: [(String, String)]) -> String {
        fields.map { "\(encode($0.0))=\(encode($0.1))" }.joined(separator: "&")
    }
}
