import Foundation
import PostgresNIO
import TeamworkModel

/// Applies the numbered migrations in order, each in its own transaction together
/// with its row in `schema_migrations`, then every stored function whose text
/// the database does not hold yet (``StoredFunction``, by checksum in
/// `schema_functions`). Concurrent migrators wait for each other on an advisory
/// lock, so running `db migrate` twice at once is safe; a second run is a no-op.
public struct Migrator: Sendable {
    public var migrations: [Migration]
    public var functions: [StoredFunction]

    public init(migrations: [Migration] = Migration.embedded, functions: [StoredFunction] = StoredFunction.embedded) {
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.functions = functions.sorted { $0.name < $1.name }
    }

    /// What one run of ``migrate(_:)`` applied.
    public struct Applied: Sendable {
        public var migrations: [Migration]
        public var functions: [StoredFunction]
        public var isEmpty: Bool { migrations.isEmpty && functions.isEmpty }
    }

    /// The state of one stored function in one database.
    public struct FunctionEntry: Sendable, Codable, Equatable {
        public var name: String
        /// When the database last took this function's text; `nil` if never.
        public var appliedAt: Date?
        /// The database holds a text other than the one this tool ships (or none).
        public var pending: Bool
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

    /// Applies what is pending; returns what it applied. A database that holds
    /// migrations this tool does not know belongs to a newer tool: its
    /// functions are left as they are.
    @discardableResult
    public func migrate(_ store: CentralStore) async throws -> Applied {
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
            let known = Set(migrations.map(\.version))
            var replaced: [StoredFunction] = []
            if applied.isSubset(of: known), let held = try await functionChecksums(store) {
                for function in functions where held[function.name] != function.checksum {
                    let statements = function.statements
                    try await connection.withTransaction(logger: logger) { connection in
                        for statement in statements {
                            try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                        }
                        try await connection.query(
                            """
                            INSERT INTO schema_functions (name, checksum) VALUES (\(function.name), \(function.checksum))
                            ON CONFLICT (name) DO UPDATE SET checksum = excluded.checksum, applied_at = now()
                            """,
                            logger: logger
                        )
                    }
                    replaced.append(function)
                }
            }
            try await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
            return Applied(migrations: done, functions: replaced)
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

    /// Every shipped stored function, and whether the database holds its text.
    /// Empty for a database that has no `schema_functions` yet (it has pending migrations).
    public func functionStatus(_ store: CentralStore) async throws -> [FunctionEntry] {
        let exists = try await store.rows("SELECT to_regclass('schema_functions') IS NOT NULL")
        guard try exists.first?.decode(Bool.self) == true else {
            return functions.map { FunctionEntry(name: $0.name, appliedAt: nil, pending: true) }
        }
        let rows = try await store.rows("SELECT name, checksum, applied_at FROM schema_functions")
        var held: [String: (checksum: String, at: Date)] = [:]
        for row in rows {
            let (name, checksum, at) = try row.decode((String, String, Date).self)
            held[name] = (checksum, at)
        }
        return functions.map { function in
            let row = held[function.name]
            return FunctionEntry(name: function.name, appliedAt: row?.at, pending: row?.checksum != function.checksum)
        }
    }

    /// Throws unless every shipped migration is applied and, for a database
    /// that is not newer than the tool, every stored function is current:
    /// other commands call it so they never run against a schema they do not understand.
    public func requireCurrent(_ store: CentralStore) async throws {
        let entries = try await status(store)
        let pending = entries.filter { $0.appliedAt == nil }
        if !pending.isEmpty {
            throw TeamworkError(
                .configuration,
                "the database schema is not up to date (\(quantity(pending.count, "pending migration"))): run `teamwork-manager db migrate`"
            )
        }
        guard !entries.contains(where: \.unknown) else { return }
        let stale = try await functionStatus(store).filter(\.pending)
        if !stale.isEmpty {
            throw TeamworkError(
                .configuration,
                "the database schema is not up to date (\(quantity(stale.count, "stored function")) to replace): run `teamwork-manager db migrate`"
            )
        }
    }

    /// What `schema_functions` holds; `nil` when the migrations that make it are not among this migrator's.
    private func functionChecksums(_ store: CentralStore) async throws -> [String: String]? {
        let exists = try await store.rows("SELECT to_regclass('schema_functions') IS NOT NULL")
        guard try exists.first?.decode(Bool.self) == true else { return nil }
        var held: [String: String] = [:]
        for row in try await store.rows("SELECT name, checksum FROM schema_functions") {
            let (name, checksum) = try row.decode((String, String).self)
            held[name] = checksum
        }
        return held
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
