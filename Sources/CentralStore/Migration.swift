/// One numbered schema change from `sql/NNNN_name.sql`, embedded at build time.
public struct Migration: Sendable, Equatable {
    public var version: Int
    public var name: String
    public var sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// A fingerprint of the text: a shipped migration must never change, and
    /// `db status` reports one whose text differs from what was applied.
    public var checksum: String { Self.checksum(of: sql) }

    /// FNV-1a of the text's UTF-8, as 16 hex digits.
    static func checksum(of text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The statements of the file, one at a time, as the extended protocol needs them.
    public var statements: [String] { SQLScript.statements(in: sql) }
}
