import EventListener
import Foundation
import LocalPostgres
import ReplicaGenerator
@_spi(Benchmark) import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable @_spi(Benchmark) import CentralStore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// The built `teamwork-service` as separate processes: killed, stopped, doubled up.
@Suite("Event listener: real processes")
struct ListenerProcessTests {
    /// A seeded master, generated replicas and a backlog of worker changes in them.
    struct Backlog {
        var url: DatabaseURL
        var folder: URL
        var expected: Int
    }

    static func withBacklog(teams: Int, tasksPerTeam: Int, _ body: (Backlog, CentralStore) async throws -> Void) async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "backlog-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            try await CentralStore.withStore(url) { try await $0.benchmarkSeed(teams: teams, tasksPerTeam: tasksPerTeam) }
            try await ReplicaGenerator(.init(databaseURL: url, directory: folder)).rebuildAll()
            let directory = try ReplicaDirectory(folder)
            var expected = 0
            for replica in try directory.replicas() where replica != .common {
                expected += try directory.syntheticFieldWork(in: replica)
            }
            try await CentralStore.withStore(url) { store in
                try await body(Backlog(url: url, folder: folder, expected: expected), store)
            }
        }
    }

    @Test func killingTheListenerTwentyTimesDuringABacklogLosesNothingAndDoublesNothing() async throws {
        try await Self.withBacklog(teams: 100, tasksPerTeam: 100) { backlog, store in
            #expect(backlog.expected == 100 * 50 * 2)
            let arguments = [
                "listen", "--database-url", backlog.url.connectionString, "--replicas", backlog.folder.path,
                "--batch", "5", "--sweep", "0.2",
            ]
            let log = backlog.folder.path + ".listen.log"
            defer { unlink(log) }
            var random = SplitMix(seed: 11)
            var landedMidBacklog = 0
            for _ in 0..<20 {
                let listener = ServiceProcess(arguments, log: log)
                try await listener.start()
                try await Task.sleep(for: .milliseconds(150 + random.next(350)))
                let status = try await listener.stop(signal: SIGKILL)
                let taken = try await store.ledgerCount()
                if status == 128 + SIGKILL && taken < backlog.expected { landedMidBacklog += 1 }
            }
            #expect(landedMidBacklog >= 10, "most kills must land while changes are still waiting")

            let last = try await Tool.service.run(arguments.filter { $0 != "--sweep" && $0 != "0.2" } + ["--once"])
            #expect(last.status == 0, "\(last.stderr)")
            #expect(try await store.ledgerCount() == backlog.expected)
            let history = try await store.historyCountsByFieldChange()
            #expect(history.count == backlog.expected && history.values.allSatisfy { $0 == 1 }, "every change once in the history")
            try await Self.expectEveryAssignedTaskCompletedByItsAssignee(store)
        }
    }

    @Test func twoListenerProcessesAtOnceShareTheWorkWithoutDoingAnyTwice() async throws {
        try await Self.withBacklog(teams: 30, tasksPerTeam: 40) { backlog, store in
            let arguments = [
                "listen", "--database-url", backlog.url.connectionString, "--replicas", backlog.folder.path,
                "--batch", "25", "--sweep", "0.2",
            ]
            let first = ServiceProcess(arguments, log: backlog.folder.path + ".one.log")
            let second = ServiceProcess(arguments, log: backlog.folder.path + ".two.log")
            try await first.start()
            try await second.start()
            let deadline = ContinuousClock.now + .seconds(90)
            while try await store.ledgerCount() < backlog.expected, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(try await first.stop() == 0, "SIGTERM: a clean exit")
            #expect(try await second.stop() == 0)
            #expect(try await store.ledgerCount() == backlog.expected)
            let history = try await store.historyCountsByFieldChange()
            #expect(history.count == backlog.expected && history.values.allSatisfy { $0 == 1 })
            try await Self.expectEveryAssignedTaskCompletedByItsAssignee(store)
        }
    }

    @Test func theServiceSurvivesPostgreSQLStoppingAndDrainsTheBacklogWhenItReturns() async throws {
        try await PrivateCluster.with("pgstop") { own in
            let (directory, url) = (own.directory, own.url)
            let folder = directory.appending(path: "replicas")
            let (fixtures, annTask, cyTask) = try await CentralStore.withStore(url) { store in
                try await Migrator().migrate(store)
                let fixtures = try await Fixtures.seed(store)
                let ann = try await store.createTask(try fixtures.task("red job", team: fixtures.red, assignee: fixtures.ann))
                let cy = try await store.createTask(try fixtures.task("blue job", team: fixtures.blue, assignee: fixtures.cy))
                return (fixtures, ann.id, cy.id)
            }
            try await ReplicaGenerator(.init(databaseURL: url, directory: folder)).rebuildAll()
            let port = ServiceProcess.freePort()
            let service = ServiceProcess(
                [
                    "run", "--database-url", url.connectionString, "--replicas", folder.path,
                    "--port", String(port), "--sweep", "0.5",
                ], port: port, log: directory.path + "/service.log")
            try await service.start()
            defer { service.stopInBackground() }
            let replicas = try ReplicaDirectory(folder)

            // Pushed off the cooperative threads: the file lock and SQLite may wait on the running service.
            _ = try await blockingWork {
                try replicas.push(
                    [.complete(annTask, note: "before the outage", id: "c-1")], to: .team(fixtures.red.id), by: fixtures.ann.id)
            }
            try await Self.expectCompleted(annTask, url: url)

            try await own.stop()
            _ = try await blockingWork {
                try replicas.push(
                    [.complete(cyTask, note: "during the outage", id: "c-2")], to: .team(fixtures.blue.id), by: fixtures.cy.id)
            }
            // The listener is seen meeting the outage (its error counter), and the service is still there.
            #expect(
                try await eventually(within: .seconds(20)) {
                    (try? await Self.get("http://127.0.0.1:\(port)/metrics"))?.1.contains("teamwork_listener_errors_total{kind=\"database_")
                        == true
                }, "\(service.logText)")
            #expect(service.isRunning, "PostgreSQL going away does not take the service down")
            try await own.start()
            try await Self.expectCompleted(cyTask, url: url, within: .seconds(40))

            let (metricsStatus, metrics) = try await Self.get("http://127.0.0.1:\(port)/metrics")
            #expect(metricsStatus == 200)
            #expect(metrics.contains("teamwork_listener_changes_applied_total 2"))
            #expect(metrics.contains("teamwork_listener_errors_total{kind=\"database_"))
            // Healthy again once every part has passed since PostgreSQL came back: the generator and its lease
            // reconnect after their backoff (at most 5 s), the listener already has (it took c-2 in).
            var health = ""
            try await expectEventually("healthy again: \(health)", within: .seconds(20)) {
                let (status, text) = try await Self.get("http://127.0.0.1:\(port)/health")
                health = text
                return status == 200 && ["listener", "generator", "lease", "watch"].allSatisfy { text.contains("\"\($0)\":\"ok\"") }
            }
            let stopped = try await service.stop()
            #expect(stopped == 0, "SIGTERM: a clean exit; the log ends: \(service.logTail(3000))")
            let history = try await CentralStore.withStore(url) { try await $0.historyCountsByFieldChange() }
            #expect(history == ["c-1": 1, "c-2": 1])
        }
    }

    static func expectEveryAssignedTaskCompletedByItsAssignee(_ store: CentralStore) async throws {
        let wrong = try await store.rows(
            """
            SELECT count(*)::int FROM tasks WHERE assignee_id IS NOT NULL
               AND (status <> 'completed' OR completed_by <> assignee_id OR completion_note <> 'done ' || id)
            """)[0].decode(Int.self)
        let untouched = try await store.rows("SELECT count(*)::int FROM tasks WHERE assignee_id IS NULL AND status <> 'open'")[0].decode(
            Int.self)
        #expect(wrong == 0 && untouched == 0)
    }

    static func expectCompleted(_ task: Int64, url: DatabaseURL, within limit: Duration = .seconds(30)) async throws {
        try await expectEventually("task \(task) completed in the master", within: limit) {
            (try? await CentralStore.withStore(url) { try await $0.task(id: task).status }) == .completed
        }
    }

    static func get(_ address: String) async throws -> (Int, String) {
        let response = try await LocalHTTP.request(url: address)
        return (response.status, response.text)
    }
}
