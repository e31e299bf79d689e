import ArgumentParser
import CentralStore
import CommandLineSupport
import Foundation
import Logging
import ReplicaGenerator
import ServiceLifecycle
import TeamworkModel

#if canImport(Glibc)
    import Glibc
#endif

/// `teamwork-service`: the replica generator, the event listener and the sync
/// endpoint, together (`run`) or one at a time, continuously or once per run
/// from a scheduler.
public struct TeamworkService: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "teamwork-service",
        abstract: "Run Teamwork's server side: the replica generator, the event listener and the sync endpoint.",
        discussion: """
            The database comes from --database-url or TEAMWORK_DATABASE_URL, else the same local default as \
            teamwork-manager. Replicas go to --replicas or TEAMWORK_REPLICAS (default $TEAMWORK_HOME/replicas). \
            Both options may also come before the subcommand.

            Exit codes: 0 success, 2 drift found by verify, 64 usage, 69 database unavailable, \
            75 listen --once could not take in every replica, or replicate --once/--full found another instance \
            generating, 78 configuration, 1 internal error.
            """,
        subcommands: [RunAll.self, Replicate.self, Listen.self, Serve.self, Verify.self]
    )

    public init() {}

    public static func runMain() async -> Never {
        await CommandRunner.run(Self.self, toolName: "teamwork-service", globalOptions: ["--database-url", "--replicas"])
    }

    /// One line on standard error.
    static func say(_ message: String) {
        CommandRunner.say(message, tool: "teamwork-service")
    }

    /// Runs `service` until SIGTERM or SIGINT asks it to finish what it has in
    /// hand: every long-running command handles signals this one way, through
    /// ServiceLifecycle's `ServiceGroup` (`run` and `serve` through Hummingbird's, the same).
    static func untilSignalled(_ services: [any Service]) async throws {
        let group = ServiceGroup(
            configuration: .init(
                services: services.map { .init(service: $0) },
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: Logger(label: "teamwork.service")
            ))
        try await group.run()
    }
}

/// Options every service command shares.
struct ServiceOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("PostgreSQL URL of the central store.", valueName: "url"))
    var databaseURL: String?

    @Option(name: .long, help: ArgumentHelp("Folder of the replica files.", valueName: "dir"))
    var replicas: String?

    /// The central store, migrated when it is the local default, else checked to be current.
    func target() async throws -> DatabaseTarget {
        let target = try await DatabaseTarget.resolve(explicit: databaseURL) { TeamworkService.say($0) }
        if target.isLocalDefault {
            try await CentralStore.withStore(target.url) { try await Migrator().migrate($0) }
        } else {
            try await CentralStore.withStore(target.url) { try await Migrator().requireCurrent($0) }
        }
        return target
    }

    /// The folder of the replica files, as named.
    var replicasURL: URL {
        let directory = replicas ?? ProcessInfo.processInfo.environment["TEAMWORK_REPLICAS"]
        return directory.map { URL(fileURLWithPath: $0) } ?? DatabaseTarget.home.appending(path: "replicas")
    }

    /// The folder of the replica files, made if missing and checked writable:
    /// a folder the service cannot use ends it at once (exit 78, one line),
    /// before it connects anywhere or binds a port.
    func replicaFolder() throws -> URL {
        let url = replicasURL
        if let reason = Self.unusableReason(url.path) {
            throw TeamworkError(.configuration, "cannot use the replica folder \(url.path): \(reason)")
        }
        return url
    }

    /// Why `path` cannot be the replica folder, or `nil` when it can: made
    /// (with its parents) if missing, and a file can be created in it.
    static func unusableReason(_ path: String) -> String? {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                return String(cString: strerror(errno))
            }
        }
        var info = stat()
        guard stat(path, &info) == 0 else { return String(cString: strerror(errno)) }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { return String(cString: strerror(ENOTDIR)) }
        let probe = path + "/.teamwork-write-check-\(getpid())"
        let descriptor = open(probe, O_CREAT | O_WRONLY | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return String(cString: strerror(errno)) }
        close(descriptor)
        unlink(probe)
        return nil
    }

    func generator(sweepInterval: Duration = .seconds(5)) async throws -> ReplicaGenerator {
        let folder = try replicaFolder()
        let target = try await target()
        var configuration = ReplicaGenerator.Configuration(databaseURL: target.url, directory: folder, sweepInterval: sweepInterval)
        // A test hook, documented in docs/operations.md: while this file exists, the generator's loop
        // makes no progress, as a stalled loop would, so /health, /metrics and the watchdog can be seen to tell.
        if let freeze = ProcessInfo.processInfo.environment["TEAMWORK_TEST_FREEZE_GENERATOR"], !freeze.isEmpty {
            configuration.beforePass = {
                while FileManager.default.fileExists(atPath: freeze), !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
        }
        // Another, documented there too: while this file exists, a full rebuild holds still once it has
        // begun streaming the master's tasks, so a test can stop PostgreSQL under it at a known moment.
        if let hold = ProcessInfo.processInfo.environment["TEAMWORK_TEST_HOLD_REBUILD"], !hold.isEmpty {
            configuration.duringRebuild = {
                // Says it got there (HOLD.reached), then holds.
                _ = FileManager.default.createFile(atPath: hold + ".reached", contents: nil)
                while FileManager.default.fileExists(atPath: hold), !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(20))
                }
            }
        }
        return try ReplicaGenerator(configuration)
    }
}
