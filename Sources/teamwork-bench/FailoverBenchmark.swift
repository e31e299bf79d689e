import ArgumentParser
@_spi(Benchmark) import CentralStore
import Foundation
import LocalPostgres
import TeamworkModel
import TeamworkTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `teamwork-bench failover`: a PostgreSQL primary with a streaming standby on loopback ports and
/// `teamwork-service run` (the release build next to this one) given both hosts, measured with the
/// standby asynchronous and then synchronous in the same run: managers' writes a second, workers'
/// pushes a second and the rate their changes reach the master; then, synchronous, the primary
/// killed while a worker pushes a check-in every 100 ms and the standby promoted: how long until a
/// change pushed after the kill is on the new primary.
struct FailoverBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "failover",
        abstract: "A primary with a streaming standby: what a synchronous standby costs, and the gap a failover leaves."
    )

    @Option(help: "Workers, in teams of 20, each with a token of their own.") var workers = 400
    @Option(help: "Check-ins each worker pushes, in one push.") var changes = 50
    @Option(help: "Tasks a manager creates one by one (a transaction each).") var tasks = 300
    @Option(help: "Port for the service.") var port = 18_484

    func run() async throws {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appending(path: "teamwork-service").path
        print(
            "machine: \(ProcessInfo.processInfo.processorCount) cores; \(workers) workers in teams of 20, \(changes) check-ins each "
                + "in one push (16 at once); \(tasks) tasks created one by one; teamwork-service run (\(binary))")
        var figures: [Bool: (tasks: Double, pushes: Double, applied: Double)] = [:]
        for synchronous in [false, true] {
            figures[synchronous] = try await measure(synchronous: synchronous, binary: binary)
        }
        if let a = figures[false], let s = figures[true] {
            print(
                String(
                    format:
                        "synchronous against asynchronous: managers' writes %.2f×, push requests %.2f×, changes reaching the master %.2f×",
                    s.tasks / a.tasks, s.pushes / a.pushes, s.applied / a.applied))
        }
    }

    private func measure(synchronous: Bool, binary: String) async throws -> (tasks: Double, pushes: Double, applied: Double) {
        let directory = URL(fileURLWithPath: "/tmp/tw-fb-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        chmod(directory.path, 0o755)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pair = StreamingPair(directory: directory, primaryPort: ServiceProcess.freePort(), standbyPort: ServiceProcess.freePort())
        defer { pair.stop() }
        try pair.start(synchronous: synchronous)
        let admin = try DatabaseURL(
            parsing: "postgres://postgres@127.0.0.1:\(pair.primaryPort),127.0.0.1:\(pair.standbyPort)/postgres"
                + "?sslmode=disable&target_session_attrs=read-write")
        _ = try await CentralStore.withStore(admin) { try await $0.createDatabaseIfMissing("teamwork") }
        let url = admin.with(database: "teamwork")
        let label = synchronous ? "synchronous standby" : "asynchronous standby"
        let teams = max(1, workers / 20)
        let (tokens, created) = try await CentralStore.withStore(url) { store in
            try await Migrator().migrate(store)
            try await store.benchmarkSeed(teams: teams, tasksPerTeam: 20, workersPerTeam: 20)
            let team = try await store.listTeams()[0].team
            let started = ContinuousClock.now
            for number in 1...tasks {
                _ = try await store.createTask(
                    try NewTask(title: "bench \(number)", assignment: try Assignment(teamID: team.id, assigneeID: nil)))
            }
            return (try await store.benchmarkTokens(), UploadBenchmark.seconds(ContinuousClock.now - started))
        }
        let taskRate = Double(tasks) / created
        print(String(format: "%@: %d tasks created one by one in %.2f s: %.0f a second", label, tasks, created, taskRate))

        let folder = directory.appending(path: "replicas")
        let log = directory.appending(path: "service.log").path
        let service = try ChildProcess.spawn(
            [
                binary, "run", "--database-url", url.connectionString, "--replicas", folder.path, "--port", String(port), "--log-level",
                "error",
            ], standardOutput: log, standardError: log)
        defer {
            kill(service, SIGTERM)
            _ = try? ChildProcess.wait(service)
        }
        try await LoadBenchmark.waitForHealth(port: port)
        // Every team's replica first (a push to one not generated yet is answered 404).
        for token in tokens {
            while try await LocalHTTP.request(
                port: port, "/v1/replicas/team-\(token.teamID)/changes?limit=1", headers: ["Authorization": "Bearer \(token.secret)"]
            ).status != 200 {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        let pushStarted = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, token) in tokens.enumerated() {
                if index >= 16 { try await group.next() }
                group.addTask { try await Self.push(port: port, token: token, changes: changes, prefix: "bench-\(index)") }
            }
            try await group.waitForAll()
        }
        let pushed = UploadBenchmark.seconds(ContinuousClock.now - pushStarted)
        let total = tokens.count * changes
        while try await CentralStore.withStore(url, { try await $0.benchmarkCount(changesLike: "bench-%") }) < total {
            try await Task.sleep(for: .milliseconds(50))
        }
        let applied = UploadBenchmark.seconds(ContinuousClock.now - pushStarted)
        print(
            String(
                format:
                    "%@: %d pushes of %d check-ins answered in %.2f s (%.0f changes a second); all %d in the master's ledger after %.2f s "
                    + "(%.0f a second)", label, tokens.count, changes, pushed, Double(total) / pushed, total, applied,
                Double(total) / applied))

        if synchronous {
            // The failover: a check-in every 100 ms from one worker, the primary killed, the standby promoted.
            let worker = tokens[0]
            let ticking = Task {
                var sent = 0
                while !Task.isCancelled {
                    sent += 1
                    _ = try? await Self.push(port: port, token: worker, changes: 1, prefix: "tick-\(sent)")
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
            defer { ticking.cancel() }
            try await Task.sleep(for: .seconds(2))
            let before = try await CentralStore.withStore(url) { try await $0.benchmarkCount(changesLike: "tick-%") }
            let killed = ContinuousClock.now
            try pair.killPrimary()
            try pair.promoteStandby()
            let promoted = UploadBenchmark.seconds(ContinuousClock.now - killed)
            var after = before
            while after <= before + 1 {
                try await Task.sleep(for: .milliseconds(50))
                after = (try? await CentralStore.withStore(url) { try await $0.benchmarkCount(changesLike: "tick-%") }) ?? after
                guard ContinuousClock.now - killed < .seconds(120) else {
                    throw TeamworkError(.unavailable, "no change reached the new primary")
                }
            }
            let gap = UploadBenchmark.seconds(ContinuousClock.now - killed)
            print(
                String(
                    format:
                        "failover: primary killed, standby promoted in %.2f s; a check-in pushed meanwhile on the new primary %.2f s after the kill",
                    promoted, gap))
        }
        return (taskRate, Double(total) / pushed, Double(total) / applied)
    }

    static func push(port: Int, token: (personID: Int64, teamID: Int64, secret: String), changes: Int, prefix: String) async throws {
        let made = ISODate.format(Date())
        let body = (0..<changes).map {
            #"{"id":"\#(prefix)-\#($0)","operation":"checkin","made_at":"\#(made)","latitude":59.33,"longitude":18.06}"#
        }
        let response = try await LocalHTTP.request(
            .post, port: port, "/v1/replicas/team-\(token.teamID)/changes",
            headers: ["Authorization": "Bearer \(token.secret)", "Content-Type": "application/json"],
            body: Data(#"{"changes":[\#(body.joined(separator: ","))]}"#.utf8), timeout: .seconds(60))
        guard response.status == 200 else { throw TeamworkError(.internal, "a push answered \(response.status)") }
    }
}
