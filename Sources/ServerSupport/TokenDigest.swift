import Crypto

/// A token's SHA-256, as the master stores it (`access_tokens.token_hash`): what
/// ``AccessCache`` knows a token by.
public struct TokenDigest: Hashable, Sendable {
    private let a, b, c, d: UInt64

    public init(secret: String) {
        self.init(bytes: Array(SHA256.hash(data: Array(secret.utf8))))!
    }

    /// The 64 hexadecimal digits, as PostgreSQL's `encode(…, 'hex')` writes them.
    public var hex: String {
        [a, b, c, d].map { word in
            let digits = String(word, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }.joined()
    }

    /// `nil` unless `bytes` are 32.
    public init?(bytes: some Collection<UInt8>) {
        let bytes = Array(bytes)
        guard bytes.count == 32 else { return nil }
        func word(_ at: Int) -> UInt64 { bytes[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        (a, b, c, d) = (word(0), word(8), word(16), word(24))
    }
}
