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
            could not be read or its changes were refused (details on standard error; run it again later).
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
        let listener = try EventListener(.init(databaseURL: target.url, directory: folder, batchSize: batch,
                                               sweepInterval: .milliseconds(Int(sweep * 1000))))
        if once {
            let report = try await listener.once()
            print("Took in \(report.recorded) worker change(s) from \(report.files) replica file(s): "
                + "\(report.applied) applied, \(report.conflicts) conflict(s)")
            for replica in report.busy.sorted() {
                TeamworkService.say("\(replica): another instance is working on it; left to it")
            }
            for (source, reason) in report.skipped.sorted(by: { $0.key < $1.key }) {
                TeamworkService.say("\(source): skipped: \(reason)")
            }
            if !report.complete { throw ExitCode(75) }
            return
        }
        let logger = Logger(label: "teamwork.service")
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: ListenerService(listener: listener, status: ServiceStatus()))],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        ))
        logger.info("listening", metadata: ["replicas": "\(folder.path)"])
        try await group.run()
    }
}

/// What `/health` reports: when each part last finished a pass, and whether
/// this instance's generator is the active one.
final class ServiceStatus: Sendable {
    private struct State {
        var listenerPass: Date?
        var generatorPass: Date?
        var generatorRole: GeneratorRole?
        var roleObservers: [@Sendable (GeneratorRole) -> Void] = []
    }

    private let state = Locked(State())

    func listenerPassed() { state.mutate { $0.listenerPass = Date() } }
    func generatorPassed() { state.mutate { $0.generatorPass = Date() } }
    private let started = Date()

    /// `teamwork_<part>_seconds_since_progress` for each part running: seconds
    /// since it last finished a pass (since the start, before its first). An
    /// alert on it catches a loop that is alive but no longer doing its job.
    func progressMetrics(generator: Bool) -> String {
        let now = Date()
        let current = state.value
        var parts = [("listener", current.listenerPass)]
        if generator && current.generatorRole != .standby { parts.append(("generator", current.generatorPass)) }
        return parts.map { name, last in
            """
            # HELP teamwork_\(name)_seconds_since_progress Seconds since the \(name) last finished a pass
            # TYPE teamwork_\(name)_seconds_since_progress gauge
            teamwork_\(name)_seconds_since_progress \(Int(now.timeIntervalSince(last ?? started)))

            """
        }.joined()
    }

    func generatorRole(_ role: GeneratorRole) {
        let observers = state.mutate { state in
            state.generatorRole = role
            return state.roleObservers
        }
        observers.forEach { $0(role) }
    }

    func onGeneratorRole(_ observer: @escaping @Sendable (GeneratorRole) -> Void) {
        state.mutate { $0.roleObservers.append(observer) }
    }

    /// Healthy when each part running finished a pass within `window`; a
    /// generator standing by for another instance is healthy too.
    func health(window: TimeInterval, generator: Bool) -> (healthy: Bool, details: [String: String]) {
        let now = Date()
        let current = state.value
        var details: [String: String] = [:]
        var healthy = true
        func check(_ name: String, _ last: Date?) {
            details["\(name)_last_pass"] = last?.formatted(.iso8601) ?? "never"
            let fresh = last.map { now.timeIntervalSince($0) <= window } ?? false
            details[name] = fresh ? "ok" : "stalled"
            healthy = healthy && fresh
        }
        check("listener", current.listenerPass)
        if generator {
            if current.generatorRole == .standby {
                details["generator"] = "standby"
            } else {
                check("generator", current.generatorPass)
            }
            details["generator_role"] = current.generatorRole?.rawValue ?? "starting"
        }
        return (healthy, details)
    }
}

/// The listener as a service: on graceful shutdown it finishes the batch in hand.
struct ListenerService: Service {
    let listener: EventListener
    let status: ServiceStatus

    func run() async throws {
        await withGracefulShutdownHandler {
            await listener.run { report in
                status.listenerPassed()
                if report.recorded > 0 || !report.complete {
                    listener.logger.info("took in worker changes", metadata: [
                        "recorded": "\(report.recorded)", "applied": "\(report.applied)", "conflicts": "\(report.conflicts)",
                        "skipped": "\(report.skipped.count)",
                    ])
                }
            }
        } onGracefulShutdown: {
            listener.stop()
        }
    }
}
