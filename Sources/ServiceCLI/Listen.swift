import ArgumentParser
import CentralStore
import EventListener
import Foundation
import Logging
import ReplicaGenerator
import ServiceLifecycle
import TeamworkModel

struct Listen: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply worker changes from the team and personal replicas to the master.",
        discussion: """
            With no flag, runs until SIGINT or SIGTERM (finishing the batch in hand): wakes when a replica file is \
            written and looks at every replica every --sweep seconds anyway. --once takes in everything waiting and \
            exits (for cron or a systemd timer): exit 0 when every replica was read to its end, 75 when a replica \
            could not be read or its changes were refused (details on standard error; run it again later). \
            Conflicts are listed by `teamwork-manager conflicts`.
            """
    )
    @OptionGroup var options: ServiceOptions
    @OptionGroup var logging: LoggingOptions
    @Flag(help: "Take in what is waiting, then exit.") var once = false
    @Option(help: "Continuous mode: seconds between sweeps.") var sweep: Double = 5
    @Option(help: "Worker changes applied per PostgreSQL transaction.") var batch: Int = 1_000

    func validate() throws {
        if !(sweep > 0) { throw ValidationError("--sweep must be positive") }
        if !(1...10_000).contains(batch) { throw ValidationError("--batch must be between 1 and 10000") }
    }

    func run() async throws {
        logging.bootstrap()
        let folder = try options.replicaFolder()
        let target = try await options.target()
        let listener = try EventListener(
            .init(
                databaseURL: target.url, directory: folder, batchSize: batch,
                sweepInterval: .milliseconds(Int(sweep * 1000))))
        if once {
            let report = try await listener.once()
            print(
                "Took in \(quantity(report.recorded, "worker change")) from \(quantity(report.files, "replica file")): "
                    + "\(report.applied) applied, \(quantity(report.conflicts, "conflict"))")
            for replica in report.busy.sorted() {
                TeamworkService.say("\(replica): another instance is working on it; left to it")
            }
            for (source, reason) in report.skipped.sorted(by: { $0.key < $1.key }) {
                TeamworkService.say("\(source): skipped: \(reason)")
            }
            if !report.complete { throw ExitCode(75) }
            return
        }
        Logger(label: "teamwork.service").info("listening", metadata: ["replicas": "\(folder.path)"])
        let keeper = LocalClusterKeeper.forLocalDefault(options, logger: Logger(label: "teamwork.service"))
        try await TeamworkService.untilSignalled([keeper].compactMap { $0 } + [ListenerService(listener: listener)])
    }
}
