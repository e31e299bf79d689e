import ArgumentParser
import CentralStore
import Foundation
import Hummingbird
import Logging
import SyncServer

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the sync endpoint: workers pull their replicas over HTTP.",
        discussion: """
            Stops cleanly on SIGINT or SIGTERM. GET /health answers 503 when the live-mode watch has not looked at \
            the replicas for 30 s; GET /metrics has the endpoint's figures. The protocol is described in docs/protocol.md.
            """
    )
    @OptionGroup var options: ServiceOptions
    @OptionGroup var logging: LoggingOptions
    @OptionGroup var server: ServerOptions

    func run() async throws {
        logging.bootstrap()
        let generator = try await options.generator()
        let logger = Logger(label: "teamwork.sync")
        var configuration = SyncServer.Configuration(
            databaseURL: generator.configuration.databaseURL,
            replicasDirectory: generator.configuration.directory)
        try server.apply(to: &configuration)
        // The endpoint's own figures and its one loop's progress, as `run` reports them.
        let status = ServiceStatus(parts: [.watch])
        configuration.watchLooked = { status.passed(.watch) }
        configuration.metrics = { status.progressMetrics() }
        configuration.health = { status.health(window: 30) }
        let keeper = LocalClusterKeeper.forLocalDefault(options, logger: logger)
        try await SyncServer.run(configuration, services: [keeper].compactMap { $0 }, logger: logger)
    }
}
