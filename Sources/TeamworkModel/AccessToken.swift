import Foundation

/// A worker's access token as managers see it: never the secret itself, which
/// is shown once when issued and stored only as a hash.
public struct AccessToken: Sendable, Codable, Equatable, Identifiable {
    public var id: Int64
    public var personID: Int64
    public var label: String
    public var createdBy: Int64?
    public var createdAt: Date
    public var lastUsedAt: Date?
    public var revokedAt: Date?

    public init(id: Int64, personID: Int64, label: String, createdBy: Int64?, createdAt: Date, lastUsedAt: Date?, revokedAt: Date?) {
        self.id = id
        self.personID = personID
        self.label = label
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.revokedAt = revokedAt
    }

    public var isRevoked: Bool { revokedAt != nil }
}

/// A token's secret: `tw_` and 43 characters of base64url, 256 random bits.
public enum TokenSecret {
    public static let prefix = "tw_"

    /// A new secret from the system's cryptographic random source.
    public static func generate() -> String {
        prefix + randomBase64URL()
    }

    /// 256 random bits from the system's cryptographic source as 43 characters of
    /// base64url (tokens, the board's session cookies and CSRF tokens).
    public static func randomBase64URL() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// True when `text` has the shape of a secret (it may still be unknown or revoked). Read as
    /// bytes: every signed-in request asks, and a check by Unicode characters (graphemes, their
    /// properties) was a twentieth of the sync endpoint's time on a no-op pull.
    public static func isWellFormed(_ text: String) -> Bool {
        let bytes = text.utf8
        guard bytes.count == prefix.utf8.count + 43, bytes.starts(with: prefix.utf8) else { return false }
        return bytes.dropFirst(prefix.utf8.count).allSatisfy(isBase64URL)
    }

    /// A byte of base64url's alphabet: ASCII letters, digits, `-` and `_`.
    private static func isBase64URL(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }
}
