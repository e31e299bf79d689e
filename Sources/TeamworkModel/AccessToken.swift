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

    /// True when `text` has the shape of a secret (it may still be unknown or revoked).
    public static func isWellFormed(_ text: String) -> Bool {
        guard text.hasPrefix(prefix), text.count == prefix.count + 43 else { return false }
        return text.dropFirst(prefix.count).allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
    }
}
