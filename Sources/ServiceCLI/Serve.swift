import ArgumentParser
import CentralStore
import Foundation
import Hummingbird
import Logging
import SyncServer

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the sync endpoint: workers pull their replicas over HTTP.",
        discussion: "Stops cleanly on SIGINT or SIGTERM. The protocol is described in docs/replicas.md."
    )
    @OptionGroup var options: ServiceOptions
    @OptionGroup var logging: LoggingOptions
    @OptionGroup var server: ServerOptions

    func run() async throws {
        logging.bootstrap()
        let generator = try await options.generator()
        let logger = Logger(label: "teamwork.sync")
        var configuration = SyncServer.Configuration(databaseURL: generator.configuration.databaseURL,
                                                     replicasDirectory: generator.configuration.directory)
        server.apply(to: &configuration)
        try await SyncServer.run(configuration, logger: logger)
    }
}
