import CentralStore
import Foundation
import LocalPostgres
#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL cluster of a test's own, for tests that stop and restart it
/// (the shared test cluster must stay up for everyone else).
public struct PrivateCluster: Sendable {
    /// A folder of the test's own (short, for the socket path), removed afterwards.
    public var directory: URL
    public var cluster: LocalCluster
    /// The cluster's `postgres` database, as its superuser.
    public var url: DatabaseURL

    /// Creates and starts a cluster under `/tmp/tw-<name>-<random>`, runs `body`,
    /// then stops the cluster and removes the folder, whatever happens.
    public static func with<R>(_ name: String, _ body: (PrivateCluster) async throws -> R) async throws -> R {
        let directory = URL(fileURLWithPath: "/tmp/tw-\(name)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        chmod(directory.path, 0o755)
        defer { try? FileManager.default.removeItem(at: directory) }
        let cluster = LocalCluster(.init(directory: directory.appending(path: "pg")))
        _ = try cluster.ensureRunning()
        defer { try? cluster.stop() }
        let url = DatabaseURL(endpoint: .unixSocket(path: cluster.socketPath), username: LocalCluster.superuser, database: "postgres")
        return try await body(PrivateCluster(directory: directory, cluster: cluster, url: url))
    }
}
