import ArgumentParser
@_spi(Benchmark) import CentralStore
import Foundation
import GRDB
import LocalPostgres
import PostgresNIO
import ReplicaGenerator
@_spi(Benchmark) import TeamDatabase
import TeamworkModel

#if canImport(Glibc)
    import Glibc
#endif

/// `teamwork-bench replicas`: seeds a synthetic master and measures the replica
/// generator. Prints figures; asserts nothing.
struct ReplicaBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replicas",
        abstract: "Full rebuild, incremental latency and catch-up throughput of the replica generator."
    )

    @Option(help: "PostgreSQL URL with rights to create a database; default: a throwaway local cluster.")
    var adminURL: String?
    @Option(help: "Number of teams.") var teams = 1_000
    @Option(help: "Tasks per team.") var tasksPerTeam = 1_000
    @Option(help: "Single changes timed in continuous mode.") var changes = 1_000
    @Option(help: "Changes in the catch-up batch.") var batch = 100_000
    @Option(help: "Also time the plain psql + sqlite3 export script over this many teams (0 to skip).")
    var baselineTeams = 100
    @Option(help: "Folder for the replicas (emptied first).") var directory = "/tmp/teamwork-bench-replicas"
    @Option(help: "Threads building files in the full rebuild (default: one per core).")
    var buildThreads = ProcessInfo.processInfo.activeProcessorCount
    @Option(help: "Full rebuilds to time, one after another (the VM's speed drifts; several show the spread).")
    var rebuilds = 1
    @Option(
        help:
            "After the first rebuild, push a start and a completion of this many tasks into each team file, as the sync endpoint would, so the later rebuilds carry field history over (0: none)."
    )
    var fieldWork = 0

    func run() async throws {
        let (admin, cluster) = try await Self.adminURL(adminURL)
        defer { _ = try? cluster?.stop() }
        let url = try await ReplicaBenchmark.freshDatabase("teamwork_bench", on: admin)
        try await CentralStore.withStore(url) { try await Migrator().migrate($0) }

        let total = teams * tasksPerTeam
        print("machine: \(ProcessInfo.processInfo.processorCount) cores, \(ProcessInfo.processInfo.physicalMemory >> 30) GiB")
        var clock = ContinuousClock.now
        try await seed(url)
        print(String(format: "seeded %d teams x %d tasks = %d tasks in %.1f s", teams, tasksPerTeam, total, Self.since(clock)))

        let folder = URL(fileURLWithPath: directory)
        try? FileManager.default.removeItem(at: folder)
        let generator = try ReplicaGenerator(.init(databaseURL: url, directory: folder, buildThreads: buildThreads))
        var rebuildSeconds = 0.0
        for round in 0..<max(1, rebuilds) {
            if round == 1, fieldWork > 0 { try pushFieldWork(into: folder) }
            clock = .now
            let cpuBefore = Self.cpuSeconds()
            let postgresBefore = Self.postgresCPUSeconds()
            let rebuilt = try await generator.rebuildAll()
            rebuildSeconds = Self.since(clock)
            let cpu = (user: Self.cpuSeconds().user - cpuBefore.user, system: Self.cpuSeconds().system - cpuBefore.system)
            let postgresCPU = Self.postgresCPUSeconds() - postgresBefore
            print(
                String(
                    format: "full rebuild: %d tasks into %d replicas in %.2f s = %.0f tasks/s",
                    rebuilt.tasks, rebuilt.replicas, rebuildSeconds, Double(rebuilt.tasks) / rebuildSeconds))
            print(
                String(
                    format: "CPU during the rebuild: generator %.2f s user + %.2f s system; PostgreSQL (all its processes here) %.2f s",
                    cpu.user, cpu.system, postgresCPU))
        }
        print("peak RSS after the full rebuild: \(Self.peakRSSMegabytes()) MB")

        if baselineTeams > 0 {
            let seconds = try baseline(url, teams: min(baselineTeams, teams))
            let perTeam = seconds / Double(min(baselineTeams, teams))
            print(
                String(
                    format:
                        "baseline psql+sqlite3 export: %.2f s for %d teams = %.1f ms/team, projected %.1f s for %d teams (%.1fx the rebuild)",
                    seconds, min(baselineTeams, teams), perTeam * 1000, perTeam * Double(teams), teams,
                    perTeam * Double(teams) / rebuildSeconds))
        }

        try await latency(url, generator: generator)

        clock = .now
        let changed = try await CentralStore.withStore(url) { store in
            try await store.benchmarkTouch(firstTasks: batch)
        }
        let writeSeconds = Self.since(clock)
        clock = .now
        let report = try await generator.catchUp()
        let catchUpSeconds = Self.since(clock)
        print(
            String(
                format: "catch-up: %d changes (written to the master in %.1f s) applied in %.2f s = %.0f changes/s, %d replica writes",
                changed, writeSeconds, catchUpSeconds, Double(report.entries) / catchUpSeconds, report.replicaWrites))
        print("peak RSS at the end: \(Self.peakRSSMegabytes()) MB")
        let drift = try await generator.verify()
        print("verify: \(drift.isEmpty ? "no drift" : "\(drift.count) differences")")
    }

    /// Continuous mode: time from a committed master change to the replica having it.
    private func latency(_ url: DatabaseURL, generator: ReplicaGenerator) async throws {
        let (passes, reached) = AsyncStream<Int64>.makeStream()
        let running = Task {
            try await generator.run { report in reached.yield(report.feedPosition) }
        }
        defer { running.cancel() }
        var samples: [Double] = []
        var iterator = passes.makeAsyncIterator()
        try await CentralStore.withStore(url) { store in
            for index in 0..<changes {
                let start = ContinuousClock.now
                let position = try await store.benchmarkRename(taskID: Int64(index % (teams * tasksPerTeam) + 1), title: "change \(index)")
                while let seen = await iterator.next(), seen < position {}
                samples.append(Self.since(start) * 1000)
            }
        }
        samples.sort()
        func percentile(_ p: Double) -> Double { samples[min(samples.count - 1, Int(Double(samples.count) * p))] }
        print(
            String(
                format: "incremental latency over %d changes (continuous mode): p50 %.1f ms, p99 %.1f ms, max %.1f ms",
                samples.count, percentile(0.5), percentile(0.99), samples.last ?? 0))
    }

    private func seed(_ url: DatabaseURL) async throws {
        try await CentralStore.withStore(url) { store in
            try await store.benchmarkSeed(teams: teams, tasksPerTeam: tasksPerTeam)
        }
    }

    /// The plain approach: per team, psql exports CSV and sqlite3 imports it.
    /// Pushes `fieldWork` tasks' start and completion into every team file.
    private func pushFieldWork(into folder: URL) throws {
        let clock = ContinuousClock.now
        let directory = try ReplicaDirectory(folder)
        var accepted = 0, files = 0
        for replica in try directory.replicas() {
            guard case .team = replica else { continue }
            accepted += try directory.syntheticFieldWork(in: replica, limit: fieldWork)
            files += 1
        }
        print(
            String(
                format: "field work: %d changes pushed into %d team files in %.1f s (carried over by the rebuilds below)",
                accepted, files, Self.since(clock)))
    }

    private func baseline(_ url: DatabaseURL, teams: Int) throws -> Double {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appending(path: "scripts/baseline-export").path
        guard case .unixSocket(let socket) = url.endpoint else {
            throw TeamworkError(.usage, "the baseline needs a unix-socket database URL")
        }
        let folder = (socket as NSString).deletingLastPathComponent
        let port = socket.split(separator: ".").last.map(String.init) ?? "5432"
        let output = "/tmp/teamwork-bench-baseline"
        let start = ContinuousClock.now
        let status = try ChildProcess.run(
            ["/bin/bash", script, folder, port, url.username, url.database, String(teams), output],
            standardOutput: "/tmp/teamwork-bench-baseline.log", standardError: "/tmp/teamwork-bench-baseline.log"
        )
        guard status == 0 else { throw TeamworkError(.internal, "the baseline script failed; see /tmp/teamwork-bench-baseline.log") }
        return Self.since(start)
    }

    /// A database called `name` made anew (dropped first) on the cluster `admin` reaches.
    static func freshDatabase(_ name: String, on admin: DatabaseURL) async throws -> DatabaseURL {
        try await CentralStore.withStore(admin) { store in
            try await store.dropDatabase(name)
            _ = try await store.createDatabaseIfMissing(name)
        }
        return admin.with(database: name)
    }

    static func adminURL(_ text: String?) async throws -> (DatabaseURL, LocalCluster?) {
        if let text { return (try DatabaseURL(parsing: text), nil) }
        let directory = URL(fileURLWithPath: "/tmp/teamwork-bench-cluster")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        chmod(directory.path, 0o755)
        let cluster = LocalCluster(.init(directory: directory.appending(path: "postgres")))
        try cluster.ensureRunning()
        return (
            DatabaseURL(endpoint: .unixSocket(path: cluster.socketPath), username: LocalCluster.superuser, database: "postgres"), cluster
        )
    }

    static func since(_ start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// CPU time this process has used so far.
    static func cpuSeconds() -> (user: Double, system: Double) {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
        return (seconds(usage.ru_utime), seconds(usage.ru_stime))
    }

    /// CPU time used so far by the `postgres` processes this machine runs, and
    /// by the ones that have ended (from /proc; includes any other PostgreSQL server here).
    static func postgresCPUSeconds() -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var total = 0.0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] where Int(name) != nil {
            guard let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")"),
                stat[stat.index(after: open)..<close] == "postgres"
            else { continue }
            // After the command: state is field 3; utime and stime are fields 14 and 15,
            // and the CPU of reaped children (the postmaster's ended backends) 16 and 17.
            let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
            guard fields.count > 14 else { continue }
            total += fields[11...14].compactMap { Double($0) }.reduce(0, +) / ticks
        }
        return total
    }

    static func peakRSSMegabytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return -1 }
        return kilobytes / 1024
    }
}
