import ArgumentParser
import CentralStore
import Foundation
import LocalPostgres
import TeamworkModel

/// Where the central store is and who is acting; shared by every command.
struct ConnectionOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("PostgreSQL URL (postgres://user:password@host:port/db).", valueName: "url"))
    var databaseURL: String?

    @Option(name: .long, help: ArgumentHelp("Email or id of the manager making changes (or TEAMWORK_ACTOR).", valueName: "person"))
    var actor: String?

    /// Connects (starting the local default if needed), checks the schema, and runs `body`.
    func withStore<R: Sendable>(requireSchema: Bool = true, _ body: (CentralStore) async throws -> R) async throws -> R {
        let target = try await DatabaseTarget.resolve(explicit: databaseURL)
        let actorReference = actor ?? ProcessInfo.processInfo.environment["TEAMWORK_ACTOR"]
        return try await CentralStore.withStore(target.url) { store in
            var store = store
            if target.isLocalDefault {
                try await Migrator().migrate(store)
            } else if requireSchema {
                try await Migrator().requireCurrent(store)
            }
            if let actorReference, !actorReference.isEmpty {
                let person = try await store.person(reference: actorReference)
                guard person.role == .manager || person.role == .admin else {
                    throw TeamworkError(.usage, "the acting person must be a manager or an admin")
                }
                store.actorID = person.id
            }
            return try await body(store)
        }
    }
}

/// The database a command talks to: the one named, or the zero-setup local default.
struct DatabaseTarget {
    var url: DatabaseURL
    var isLocalDefault: Bool
    var localCluster: LocalCluster?

    static let localDatabaseName = "teamwork"

    static func resolve(explicit: String?) async throws -> DatabaseTarget {
        let environment = ProcessInfo.processInfo.environment
        if let text = explicit ?? environment["TEAMWORK_DATABASE_URL"], !text.isEmpty {
            return DatabaseTarget(url: try DatabaseURL(parsing: text), isLocalDefault: false)
        }
        let cluster = localCluster()
        let outcome: LocalCluster.StartOutcome
        do {
            outcome = try cluster.ensureRunning()
        } catch let error as LocalClusterError {
            throw TeamworkError(.configuration, "local PostgreSQL: \(error.message)")
        }
        if outcome != .alreadyRunning {
            let verb = outcome == .created ? "created and started" : "started"
            Output.write(Data(
                "teamwork-manager: \(verb) the local PostgreSQL in \(cluster.configuration.directory.path) (unix socket only)\n".utf8
            ), to: STDERR_FILENO)
        }
        let admin = DatabaseURL(endpoint: .unixSocket(path: cluster.socketPath), username: LocalCluster.superuser, database: "postgres")
        _ = try await CentralStore.withStore(admin) { store in
            try await store.createDatabaseIfMissing(localDatabaseName)
        }
        return DatabaseTarget(url: admin.with(database: localDatabaseName), isLocalDefault: true, localCluster: cluster)
    }

    /// The local default cluster's place: `$TEAMWORK_HOME/postgres`, where
    /// TEAMWORK_HOME defaults to /var/lib/teamwork for root and
    /// `$XDG_DATA_HOME/teamwork` (or ~/.local/share/teamwork) for everyone else.
    static func localCluster() -> LocalCluster {
        let environment = ProcessInfo.processInfo.environment
        let home: URL
        if let explicit = environment["TEAMWORK_HOME"], !explicit.isEmpty {
            home = URL(fileURLWithPath: explicit)
        } else if geteuid() == 0 {
            home = URL(fileURLWithPath: "/var/lib/teamwork")
        } else if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty {
            home = URL(fileURLWithPath: xdg).appending(path: "teamwork")
        } else {
            home = FileManager.default.homeDirectoryForCurrentUser.appending(path: ".local/share/teamwork")
        }
        return LocalCluster(.init(directory: home.appending(path: "postgres")))
    }
}

/// `--json` for read commands.
struct OutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Print JSON instead of a table, for scripts.")
    var json = false
}
