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
    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on.") var port = 8080

    func validate() throws {
        if !(1...65_535).contains(port) { throw ValidationError("--port must be between 1 and 65535") }
    }

    func run() async throws {
        let generator = try await options.generator()
        var logger = Logger(label: "teamwork.sync")
        logger.logLevel = .info
        try await SyncServer.run(
            .init(databaseURL: generator.configuration.databaseURL, replicasDirectory: generator.configuration.directory,
                  host: host, port: port),
            logger: logger
        )
    }
}
