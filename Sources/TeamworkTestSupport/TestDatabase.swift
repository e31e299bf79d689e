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
    /// `body` with its URL, and drops it whatever happens.
    public static func withFresh<R: Sendable>(
        migrated: Bool = true, _ body: (DatabaseURL) async throws -> R
    ) async throws -> R {
        try await limiter.withPermit {
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
        let name = "tw_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        _ = try await CentralStore.withStore(admin) { try await $0.createDatabaseIfMissing(name) }
        let url = admin.with(database: name)
        do {
            if migrated {
                try await CentralStore.withStore(url) { try await Migrator().migrate($0) }
            }
            let result = try await body(url)
            try await drop(name, admin: admin)
            return result
        } catch {
            try? await drop(name, admin: admin)
            throw error
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
