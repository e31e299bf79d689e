import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import TeamworkModel
import WorkerClient

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Keep this device current until stopped (Ctrl-C or SIGTERM): live sync.",
        discussion: """
            Syncs, then waits for the server to say one of your replicas changed (or for you to queue a change \
            with start, complete, claim or checkin in another terminal) and syncs again at once. Prints one line \
            per thing you would care about: a new task for you or your team, a task of yours changed or taken \
            away, a change of yours refused. When the server cannot be reached it tries again by itself \
            (1 s, doubling up to 30 s) and resumes; your queued work is kept. Exit 0 when stopped, 68 when the \
            token is refused.
            """
    )
    @OptionGroup var network: NetworkOptions

    func run() async throws {
        let home = try WorkerHome()
        var client = try home.client()
        client.timeouts = network.timeouts
        let watcher = Watcher(synchronizer: Synchronizer(client: client, store: try home.store()))
        TeamworkWorker.say("Watching \(client.server.absoluteString); stop with Ctrl-C.")
        // Signals are handled as the service handles them: ServiceLifecycle's group.
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: WatchService(watcher: watcher))],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: Logger(label: "teamwork.worker", factory: { _ in SwiftLogNoOpLogHandler() })
            ))
        do {
            try await group.run()
            TeamworkWorker.say("Stopped.")
        } catch let failure as SyncClient.Failure {
            throw failure.teamworkError
        }
    }
}

/// The watch as a service: stops at SIGTERM or SIGINT.
struct WatchService: Service {
    let watcher: Watcher

    func run() async throws {
        try await cancelWhenGracefulShutdown {
            try await watcher.run { TeamworkWorker.say($0) }
        }
    }
}
