import ArgumentParser
@_spi(Benchmark) import CentralStore
import EventListener
import Foundation
import Logging
import ReplicaGenerator
@_spi(Benchmark) import TeamDatabase
import TeamworkModel

/// `teamwork-bench listener`: a backlog of worker changes across many teams
/// applied to the master, then single changes timed from the replica file to
/// the master. Prints figures; asserts nothing.
struct ListenerBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listener",
        abstract: "Measure the event listener: backlog throughput and write-to-master latency."
    )
    @Option(help: "PostgreSQL URL with rights to create a database; default: a throwaway local cluster.")
    var adminURL: String?
    @Option(help: "Number of teams.") var teams = 100
    @Option(
        help:
            "Tasks per team; half are assigned, and each assigned one gets a start and a completion; then a third of all are free ones claimed, started and completed."
    )
    var tasksPerTeam = 1_000
    @Option(help: "Single changes timed in continuous mode.") var changes = 1_000
    @Option(help: "Worker changes per PostgreSQL transaction.") var batch = 1_000

    func run() async throws {
        let (admin, cluster) = try await ReplicaBenchmark.adminURL(adminURL)
        defer { _ = try? cluster?.stop() }
        let url = try await ReplicaBenchmark.freshDatabase("teamwork_bench_listener", on: admin)
        try await CentralStore.withStore(url) { store in
            try await Migrator().migrate(store)
            try await store.benchmarkSeed(teams: teams, tasksPerTeam: tasksPerTeam)
        }
        let folder = FileManager.default.temporaryDirectory.appending(path: "teamwork-bench-listener")
        try? FileManager.default.removeItem(at: folder)
        var quiet = Logger(label: "bench")
        quiet.logLevel = .critical
        let generator = try ReplicaGenerator(.init(databaseURL: url, directory: folder, sweepInterval: .seconds(5)), logger: quiet)
        try await generator.rebuildAll()
        let listener = try EventListener(.init(databaseURL: url, directory: folder, batchSize: batch), logger: quiet)
        print("machine: \(ProcessInfo.processInfo.processorCount) cores; \(teams) teams x \(tasksPerTeam) tasks")

        // Backlogs written as the sync endpoint writes pushes, each taken in by one `listen --once`.
        // First each assignee starts and completes each of their tasks ...
        let directory = try ReplicaDirectory(folder)
        let teamReplicas = try directory.replicas().filter { $0 != .common }
        print("\(batch) changes per transaction")
        try await measure("assigned", "start, complete by the assignee", listener) {
            try teamReplicas.reduce(0) { $0 + (try directory.syntheticFieldWork(in: $1)) }
        }
        // Free-floating work: a third of each team's tasks claimed, started and
        // completed by one member each (the bulk path, claims included) ...
        try await measure("free-floating", "claim, start, complete by one member each", listener) {
            try teamReplicas.reduce(0) {
                $0 + (try directory.syntheticFreeWork(in: $1, limit: tasksPerTeam / 3, prefix: "free").written)
            }
        }
        // ... then the rest of the free tasks worked by two members each, offline:
        // the sync endpoint refuses the second, and every change of these tasks
        // goes the change-by-change way (the rules and their conflicts).
        try await measure("contested", "two members each claim, start, complete; the second refused", listener) {
            try teamReplicas.reduce(0) {
                $0 + (try directory.syntheticFreeWork(in: $1, workersPerTask: 2, prefix: "contested").written)
            }
        }

        try await latency(url, generator: generator, directory: directory)
        print("peak RSS: \(ReplicaBenchmark.peakRSSMegabytes()) MB")
    }

    /// Writes a backlog, then times one `listen --once` over it.
    private func measure(
        _ name: String, _ what: String, _ listener: EventListener,
        write: () throws -> Int
    ) async throws {
        var start = ContinuousClock.now
        let written = try write()
        let writing = ReplicaBenchmark.since(start)
        start = ContinuousClock.now
        let report = try await listener.once()
        let elapsed = ReplicaBenchmark.since(start)
        print(
            String(
                format: "%@: %d changes (%@) written in %.2f s, applied to the master in %.2f s = %.0f changes/s; %d applied, %d conflicts",
                name, report.recorded, what, writing, elapsed, Double(report.recorded) / elapsed, report.applied,
                report.conflicts))
        if report.recorded != written {
            print("warning: \(written) written, \(report.recorded) recorded")
        }
    }

    /// Continuous mode with the generator running too, as `teamwork-service run`
    /// does: each sample reopens one completed task in its team database (as a
    /// pushed change) and waits until the master's notification of that task's change.
    private func latency(_ url: DatabaseURL, generator: ReplicaGenerator, directory: ReplicaDirectory) async throws {
        var quiet = Logger(label: "bench")
        quiet.logLevel = .critical
        let listener = try EventListener(.init(databaseURL: url, directory: directory.url, batchSize: batch), logger: quiet)
        let generating = Task { try await generator.run() }
        let listening = Task { await listener.run() }
        defer {
            listener.stop()
            generating.cancel()
        }
        let (notifications, notify) = AsyncStream<Void>.makeStream()
        let (ready, isReady) = AsyncStream<Void>.makeStream()
        let watching = Task {
            await CentralStore.listen(on: CentralStore.feedChannel, at: url, logger: quiet) { events in
                for await event in events {
                    switch event {
                    case .listening: isReady.yield()
                    // A notification may have gone unheard while the LISTEN was away: the sample looks again.
                    case .notified, .lost: notify.yield()
                    }
                }
            }
        }
        defer { watching.cancel() }
        var readyIterator = ready.makeAsyncIterator()
        _ = await readyIterator.next()
        try await Task.sleep(for: .seconds(1))

        let samplesToTake = changes
        let targets = try await CentralStore.withStore(url) { store in
            try await store.listTasks(TaskFilter(statuses: [.completed], limit: samplesToTake)).map { ($0.id, $0.teamID!, $0.completedBy!) }
        }
        var samples: [Double] = []
        var iterator = notifications.makeAsyncIterator()
        try await CentralStore.withStore(url, logger: quiet) { store in
            for (task, team, person) in targets {
                let start = ContinuousClock.now
                _ = try directory.push(
                    [WorkerChange(id: "reopen-\(task)", operation: .reopen, taskID: task, madeAt: Date())],
                    to: .team(team), by: person)
                while await iterator.next() != nil {
                    if try await store.task(id: task).status != .completed { break }
                }
                samples.append(ReplicaBenchmark.since(start) * 1000)
            }
        }
        samples.sort()
        func percentile(_ p: Double) -> Double { samples[min(samples.count - 1, Int(Double(samples.count) * p))] }
        print(
            String(
                format: "latency from a change written to a team database to the master showing it, over %d changes "
                    + "(continuous mode, generator running): p50 %.1f ms, p99 %.1f ms, max %.1f ms",
                samples.count, percentile(0.5), percentile(0.99), samples.last ?? 0))
        listener.stop()
        await listening.value
    }
}
