import CentralStore
import Foundation
import LocalPostgres
import TeamworkModel

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
        let cluster = LocalCluster(.init(directory: directory.appending(path: "pg")))
        let url = DatabaseURL(endpoint: .unixSocket(path: cluster.socketPath), username: LocalCluster.superuser, database: "postgres")
        let own = PrivateCluster(directory: directory, cluster: cluster, url: url)
        return try await withCleanup {
            try await own.start()
            return try await body(own)
        } cleanup: {
            _ = try? await own.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// Starts the server (initdb first, the first time), on a Dispatch thread: initdb and
    /// `pg_ctl start` take seconds, which on a cooperative thread would stall the other tests.
    @discardableResult
    public func start() async throws -> LocalCluster.StartOutcome {
        let cluster = cluster
        return try await blockingWork { try cluster.ensureRunning() }
    }

    /// Stops the server (fast shutdown), on a Dispatch thread; whether it was running.
    @discardableResult
    public func stop() async throws -> Bool {
        let cluster = cluster
        return try await blockingWork { try cluster.stop() }
    }

    /// Stops (SIGSTOP) or resumes (SIGCONT) the server and every backend process: a master
    /// that keeps its connections open and answers nothing, as a host that hung or dropped off
    /// the network without closing them.
    public func pause(_ paused: Bool) throws {
        let pidFile = cluster.dataDirectory.appending(path: "postmaster.pid")
        guard let text = try? String(contentsOf: pidFile, encoding: .utf8),
            let first = text.split(separator: "\n").first, let postmaster = pid_t(first)
        else {
            throw CocoaError(.fileReadNoSuchFile)
        }
        // Its children, by the parent id in /proc/<pid>/stat (after the name in parentheses).
        let children = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == postmaster ? pid : nil
        }
        for pid in [postmaster] + children { kill(pid, paused ? SIGSTOP : SIGCONT) }
    }
}
