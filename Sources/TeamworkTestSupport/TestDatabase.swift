import CentralStore
import Foundation
import TeamworkModel

/// Throwaway databases for tests, each created fresh in the test PostgreSQL
/// cluster that `scripts/test` starts, and dropped afterwards.
///
/// The cluster is named by `TEAMWORK_TEST_DATABASE_URL`: a URL with rights to
/// create databases (the throwaway cluster's superuser).
public enum TestDatabase {
    /// The administrative URL of the test cluster.
    public static func adminURL() throws -> DatabaseURL {
        guard let text = ProcessInfo.processInfo.environment["TEAMWORK_TEST_DATABASE_URL"], !text.isEmpty else {
            throw TeamworkError(
                .configuration,
                "TEAMWORK_TEST_DATABASE_URL is not set: run the tests with scripts/test, which starts a throwaway PostgreSQL"
            )
        }
        return try DatabaseURL(parsing: text)
    }

    /// Creates an empty database (migrated unless `migrated` is false), runs
    /// `body` with its URL, and drops it whatever happens. A test of a suite that runs its tests one
    /// at a time (`.serialized`) goes `ahead` of the others waiting for a database: its suite waits
    /// for each of them in turn. In line with the rest, the board's suite waited 250 s for its second
    /// database, then ran its last 17 tests alone on an idle machine for a minute (the whole run
    /// took 364-393 s; seen in swift test's event stream).
    public static func withFresh<R: Sendable>(
        migrated: Bool = true, ahead: Bool = false, _ body: (DatabaseURL) async throws -> R
    ) async throws -> R {
        PoolWatch.start()
        return try await limiter.withPermit(ahead: ahead) {
            try await withFreshUnlimited(migrated: migrated, body)
        }
    }

    /// Bounds how many throwaway databases are in use at once: tests run in
    /// parallel, and each holds connections of a cluster with a fixed maximum.
    static let limiter = Limiter(permits: 6)

    private static func withFreshUnlimited<R: Sendable>(
        migrated: Bool, _ body: (DatabaseURL) async throws -> R
    ) async throws -> R {
        let admin = try adminURL()
        let name = uniqueName("tw_test_")
        if migrated {
            let template = try await Self.template.name(admin: admin)
            try await CentralStore.withStore(admin) { try await $0.createDatabase(name, copying: template) }
        } else {
            _ = try await CentralStore.withStore(admin) { try await $0.createDatabaseIfMissing(name) }
        }
        let url = admin.with(database: name)
        do {
            let result = try await body(url)
            try await drop(name, admin: admin)
            return result
        } catch {
            try? await drop(name, admin: admin)
            throw error
        }
    }

    static func uniqueName(_ prefix: String) -> String {
        prefix + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
    }

    /// The migrated databases are copies of one the test process migrated once (the migrations and
    /// stored functions cost the cluster about 0.7 s of work a database, a copy 0.2 s): named by a
    /// digest of what it holds, so a cluster keeps one per state of `sql/`, whichever run made it.
    static let template = MigratedTemplate()

    actor MigratedTemplate {
        private var made: Task<String, any Error>?

        func name(admin: DatabaseURL) async throws -> String {
            if let made, let name = try? await made.value { return name }
            let task = Task { try await Self.make(admin: admin) }
            made = task
            return try await task.value
        }

        /// Migrates a database of its own, then renames it to the digest's name: a template is whole or
        /// absent, and two processes making one at once keep the first.
        private static func make(admin: DatabaseURL) async throws -> String {
            let migrator = Migrator()
            // What the template holds: each migration's number, name and text, each function's, and how the
            // migrator applies them (bump `how` when Migrator changes what it writes).
            let how = "migrator 1"
            let state =
                ([how] + migrator.migrations.map { "\($0.version) \($0.name) \($0.checksum)" }
                + migrator.functions.map { $0.name + $0.checksum }).joined(separator: ",")
            let digest = state.utf8.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }  // FNV-1a
            let name = "tw_template_" + String(digest, radix: 16)
            if try await CentralStore.withStore(admin, { try await $0.databaseExists(name) }) { return name }
            let building = uniqueName("tw_building_")
            _ = try await CentralStore.withStore(admin) { try await $0.createDatabaseIfMissing(building) }
            try await CentralStore.withStore(admin.with(database: building)) { _ = try await migrator.migrate($0) }
            try await CentralStore.withStore(admin) { store in
                do {
                    try await store.renameDatabase(building, to: name)
                } catch {
                    try await store.dropDatabase(building)
                    guard try await store.databaseExists(name) else { throw error }
                }
            }
            return name
        }
    }

    /// A migrated database with a store connected to it.
    public static func withStore<R: Sendable>(actorID: Int64? = nil, _ body: (CentralStore) async throws -> R) async throws -> R {
        try await withFresh { url in
            try await CentralStore.withStore(url, actorID: actorID, body)
        }
    }

    private static func drop(_ name: String, admin: DatabaseURL) async throws {
        try await CentralStore.withStore(admin) { store in
            try await store.dropDatabase(name)
        }
    }
}
