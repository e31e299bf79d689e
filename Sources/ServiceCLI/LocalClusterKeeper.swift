import CentralStore
import Foundation
import LocalPostgres
import Logging
import ServiceLifecycle
import TeamworkModel

/// On the local default (no database URL given), the service's PostgreSQL is
/// its own private cluster: when it finds it stopped (`db stop-local`, a
/// reboot of the cluster alone, a crash) it starts it again, as the manager
/// tool does, instead of retrying against nothing for ever. Looks every
/// `interval`; one line in the log each time it had to start it.
struct LocalClusterKeeper: Service {
    let cluster: LocalCluster
    let logger: Logger
    var interval: Duration = .seconds(5)

    /// A keeper when the service runs on the local default, else nil.
    static func forLocalDefault(_ options: ServiceOptions, logger: Logger) -> LocalClusterKeeper? {
        let given = options.databaseURL ?? ProcessInfo.processInfo.environment["TEAMWORK_DATABASE_URL"]
        guard given?.isEmpty ?? true else { return nil }
        return LocalClusterKeeper(cluster: DatabaseTarget.localCluster(), logger: logger)
    }

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                let cluster = self.cluster
                do {
                    let outcome = try await blockingWork { try cluster.ensureRunning() }
                    if outcome != .alreadyRunning {
                        logger.notice(
                            "the local PostgreSQL was not running; started it again",
                            metadata: ["cluster": "\(cluster.configuration.directory.path)"])
                    }
                } catch {
                    logger.error("the local PostgreSQL is not running and cannot be started", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
