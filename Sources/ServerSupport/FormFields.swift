import Foundation

/// `application/x-www-form-urlencoded` fields (a form's body, a query string), by name.
public struct FormFields: Sendable {
    public private(set) var pairs: [(name: String, value: String)] = []

    /// Fields of `text`; a field that is not valid percent-encoded UTF-8 makes the whole thing unreadable.
    public init?(_ text: Substring) {
        for part in text.split(separator: "&", omittingEmptySubsequences: true) {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(pieces[0]), let value = Self.decode(pieces.count > 1 ? pieces[1] : "") else { return nil }
            pairs.append((name, value))
        }
    }

    public subscript(_ name: String) -> String? { pairs.first { $0.name == name }?.value }
    public func all(_ name: String) -> [String] { pairs.filter { $0.name == name }.map(\.value) }

    private static func decode(_ text: Substring) -> String? {
        String(text).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    /// A query value written for a link.
    public static func encode(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// `name=value&…` for a link's query.
    public static func query(_ fields: [(String, String)]) -> String {
        fields.map { "\(encode($0.0))=\(encode($0.1))" }.joined(separator: "&")
    }
}
