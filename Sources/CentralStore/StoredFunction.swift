/// One stored function (or trigger function) from `sql/functions/NAME.sql`,
/// embedded at build time: the one place its body lives.
///
/// Migrations create tables and change them once; a function is replaced
/// whole, so its current text is kept in one file and applied by
/// ``Migrator/migrate(_:)`` after the numbered migrations whenever its
/// checksum differs from the one the database last took. A fix is made once,
/// in its file. `CREATE OR REPLACE` keeps grants and triggers; a change of a
/// function's parameters or result type still needs a numbered migration that
/// drops the old one first.
public struct StoredFunction: Sendable, Equatable {
    public var name: String
    public var sql: String

    public init(name: String, sql: String) {
        self.name = name
        self.sql = sql
    }

    /// A fingerprint of the text, as for a migration.
    public var checksum: String { Migration.checksum(of: sql) }

    /// The statements of the file, one at a time, as the extended protocol needs them.
    public var statements: [String] { SQLScript.statements(in: sql) }
}
