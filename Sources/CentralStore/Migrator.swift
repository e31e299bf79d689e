import Foundation
import PostgresNIO
import TeamworkModel

/// Applies the numbered migrations in order, each in its own transaction together
/// with its row in `schema_migrations`. Concurrent migrators wait for each other on
/// an advisory lock, so running `db migrate` twice at once is safe; a second run is a no-op.
public struct Migrator: Sendable {
    public var migrations: [Migration]

    public init(migrations: [Migration] = Migration.embedded) {
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    /// The state of one migration in one database.
    public struct Entry: Sendable, Codable, Equatable {
        public var version: Int
        public var name: String
        public var appliedAt: Date?
        /// The applied text differs from the text this tool ships.
        public var modified: Bool
        /// Applied in the database but unknown to this tool (the database is newer).
        public var unknown: Bool
    }

    static let lockKey: Int64 = 7_310_150_000

    /// Applies what is pending; returns the migrations it applied.
    @discardableResult
    public func migrate(_ store: CentralStore) async throws -> [Migration] {
        let logger = store.logger
        let connection = store.connection
        try await connection.query("SELECT pg_advisory_lock(\(Self.lockKey))", logger: logger)
        do {
            try await ensureTable(store)
            let applied = Set(try await appliedRows(store).map(\.version))
            var done: [Migration] = []
            for migration in migrations where !applied.contains(migration.version) {
                let statements = migration.statements
                try await connection.withTransaction(logger: logger) { connection in
                    for statement in statements {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await connection.query(
                        """
                        INSERT INTO schema_migrations (version, name, checksum)
                        VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                        """,
                        logger: logger
                    )
                }
                done.append(migration)
            }
            try await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
            return done
        } catch {
            _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
            throw StoreError.map(error)
        }
    }

    /// Every known and every applied migration, in version order.
    public func status(_ store: CentralStore) async throws -> [Entry] {
        let exists = try await store.rows("SELECT to_regclass('schema_migrations') IS NOT NULL")
        let applied = try exists.first?.decode(Bool.self) == true ? try await appliedRows(store) : []
        var byVersion = Dictionary(uniqueKeysWithValues: applied.map { ($0.version, $0) })
        var entries: [Entry] = migrations.map { migration in
            let row = byVersion.removeValue(forKey: migration.version)
            return Entry(
                version: migration.version, name: migration.name, appliedAt: row?.appliedAt,
                modified: row.map { $0.checksum != migration.checksum } ?? false, unknown: false
            )
        }
        entries += byVersion.values.map {
            Entry(version: $0.version, name: $0.name, appliedAt: $0.appliedAt, modified: false, unknown: true)
        }
        return entries.sorted { $0.version < $1.version }
    }

    /// Throws unless every shipped migration is applied: other commands call it
    /// so they never run against a schema they do not understand.
    public func requireCurrent(_ store: CentralStore) async throws {
        let pending = try await status(store).filter { $0.appliedAt == nil }
        if !pending.isEmpty {
            throw TeamworkError(
                .configuration,
                "the database schema is not up to date (\(pending.count) pending migration(s)): run `teamwork-manager db migrate`"
            )
        }
    }

    private func ensureTable(_ store: CentralStore) async throws {
        try await store.connection.query(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version    integer PRIMARY KEY,
                name       text NOT NULL,
                checksum   text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """,
            logger: store.logger
        )
    }

    private struct AppliedRow {
        var version: Int
        var name: String
        var checksum: String
        var appliedAt: Date
    }

    private func appliedRows(_ store: CentralStore) async throws -> [AppliedRow] {
        try await store.rows("SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version").map {
            let (version, name, checksum, appliedAt) = try $0.decode((Int, String, String, Date).self)
            return AppliedRow(version: version, name: name, checksum: checksum, appliedAt: appliedAt)
        }
    }
}
