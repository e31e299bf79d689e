import ArgumentParser
@_spi(Benchmark) import CentralStore
import Foundation
import Hummingbird
import Logging
import ReplicaGenerator
import SyncServer
@_spi(Benchmark) import TeamDatabase
import TeamworkModel
import WorkerClient

/// `teamwork-bench sync`: a worker's syncs against a real sync endpoint (in
/// this process, over loopback HTTP) and a real master. Prints figures.
struct SyncBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "First sync of a large team, no-op sync, sync after master changes, pushing queued changes."
    )

    @Option(help: "PostgreSQL URL with rights to create a database; default: a throwaway local cluster.")
    var adminURL: String?
    @Option(help: "Tasks in the worker's team.") var tasks = 10_000
    @Option(help: "Master changes before the delta sync.") var changes = 100
    @Option(help: "Changes queued on the device before the push.") var queued = 1_000
    @Option(help: "Port for the sync endpoint.") var port = 18_181

    func run() async throws {
        let (admin, cluster) = try await ReplicaBenchmark.adminURL(adminURL)
        defer { _ = try? cluster?.stop() }
        let url = try await ReplicaBenchmark.freshDatabase("teamwork_bench_sync", on: admin)
        let secret = try await CentralStore.withStore(url) { store in
            try await Migrator().migrate(store)
            try await store.benchmarkSeed(teams: 1, tasksPerTeam: tasks)
            return try await store.issueToken(personID: 1, label: "bench").secret
        }
        let folder = FileManager.default.temporaryDirectory.appending(path: "teamwork-bench-sync")
        try? FileManager.default.removeItem(at: folder)
        let generator = try ReplicaGenerator(.init(databaseURL: url, directory: folder.appending(path: "replicas")))
        try await generator.rebuildAll()

        var logger = Logger(label: "bench.sync")
        logger.logLevel = .critical
        let app = try SyncServer.makeApplication(
            .init(databaseURL: url, replicasDirectory: generator.configuration.directory, port: port), logger: logger
        )
        let server = Task { try await app.runService() }
        defer { server.cancel() }
        try await Task.sleep(for: .milliseconds(500))

        let store = try LocalStore(path: folder.appending(path: "device.sqlite").path)
        let synchronizer = Synchronizer(
            client: SyncClient(server: URL(string: "http://127.0.0.1:\(port)/")!, token: secret),
            store: store)
        print("machine: \(ProcessInfo.processInfo.processorCount) cores; team of \(tasks) tasks; server and client in one process")

        var start = ContinuousClock.now
        let first = try await synchronizer.sync()
        print(String(format: "first sync: %d rows in %.0f ms", first.pulledRows, ReplicaBenchmark.since(start) * 1000))

        var samples: [Double] = []
        for _ in 0..<21 {
            start = .now
            _ = try await synchronizer.sync()
            samples.append(ReplicaBenchmark.since(start) * 1000)
        }
        samples.sort()
        print(
            String(
                format: "no-op sync: median %.1f ms, max %.1f ms over %d syncs", samples[samples.count / 2], samples.last!, samples.count))

        _ = try await CentralStore.withStore(url) { try await $0.benchmarkTouch(firstTasks: changes) }
        try await generator.catchUp()
        start = .now
        let delta = try await synchronizer.sync()
        print(
            String(
                format: "sync after %d master changes: %d rows in %.1f ms", changes, delta.pulledRows, ReplicaBenchmark.since(start) * 1000)
        )

        for index in 0..<queued {
            _ = try store.enqueue(.checkin, taskID: nil, in: "team-1", by: 1, latitude: Double(index % 90), longitude: 0)
        }
        start = .now
        let push = try await synchronizer.sync()
        print(
            String(
                format: "push of %d queued changes: %d accepted, %d rejected in %.0f ms",
                queued, push.pushed, push.rejected, ReplicaBenchmark.since(start) * 1000))
    }
}
