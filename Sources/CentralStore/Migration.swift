import TeamworkModel

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

    /// The text's ``Fingerprint``.
    static func checksum(of text: String) -> String { Fingerprint.of(text) }

    /// The statements of the file, one at a time, as the extended protocol needs them.
    public var statements: [String] { SQLScript.statements(in: sql) }
}
