import Foundation
import LocalPostgres
import TeamworkModel

/// The database a command talks to: the one named, or the zero-setup local default.
public struct DatabaseTarget: Sendable {
    public var url: DatabaseURL
    public var isLocalDefault: Bool
    public var localCluster: LocalCluster?

    public static let localDatabaseName = "teamwork"

    /// The URL given (`explicit`, else TEAMWORK_DATABASE_URL), or the local default,
    /// created and started as needed; `announce` hears when that happens.
    public static func resolve(explicit: String?, announce: (String) -> Void) async throws -> DatabaseTarget {
        let environment = ProcessInfo.processInfo.environment
        if let text = explicit ?? environment["TEAMWORK_DATABASE_URL"], !text.isEmpty {
            return DatabaseTarget(url: try DatabaseURL(parsing: text), isLocalDefault: false)
        }
        let cluster = localCluster()
        let outcome: LocalCluster.StartOutcome
        do {
            // pg_ctl (and initdb the first time) under the cluster's lock: waited for off the cooperative threads.
            outcome = try await blockingWork { try cluster.ensureRunning() }
        } catch let error as LocalClusterError {
            throw TeamworkError(.configuration, "local PostgreSQL: \(error.message)")
        }
        if outcome != .alreadyRunning {
            let verb = outcome == .created ? "created and started" : "started"
            announce("\(verb) the local PostgreSQL in \(cluster.configuration.directory.path) (unix socket only)")
        }
        let admin = DatabaseURL(endpoint: .unixSocket(path: cluster.socketPath), username: LocalCluster.superuser, database: "postgres")
        _ = try await CentralStore.withStore(admin) { store in
            try await store.createDatabaseIfMissing(localDatabaseName)
        }
        return DatabaseTarget(url: admin.with(database: localDatabaseName), isLocalDefault: true, localCluster: cluster)
    }

    /// The local default cluster: `$TEAMWORK_HOME/postgres`, where
    /// TEAMWORK_HOME defaults to /var/lib/teamwork for root and
    /// `$XDG_DATA_HOME/teamwork` (or ~/.local/share/teamwork) for everyone else.
    public static func localCluster() -> LocalCluster {
        LocalCluster(.init(directory: home.appending(path: "postgres")))
    }

    /// TEAMWORK_HOME: where the local default keeps its data.
    public static var home: URL {
        let environment = ProcessInfo.processInfo.environment
        if let explicit = environment["TEAMWORK_HOME"], !explicit.isEmpty {
            return URL(fileURLWithPath: explicit)
        } else if geteuid() == 0 {
            return URL(fileURLWithPath: "/var/lib/teamwork")
        } else if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty {
            return URL(fileURLWithPath: xdg).appending(path: "teamwork")
        } else {
            return FileManager.default.homeDirectoryForCurrentUser.appending(path: ".local/share/teamwork")
        }
    }
}
