import Foundation
import LocalPostgres
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 65: a PostgreSQL primary with a synchronous streaming standby, the service given both
/// hosts (`postgres://…@h1,h2/db?target_session_attrs=read-write`, libpq's syntax and meaning), the
/// primary killed while a worker syncs and the standby promoted, as an operator does. Before it,
/// the URL was refused ("database URL must look like postgres://user:password@host:5432/database").
@Suite("A PostgreSQL failover, followed", .serialized)
struct FailoverTests {
    /// A primary and its standby of the test's own on two loopback ports; both stopped and removed after `body`.
    /// Two clusters and what a test starts on them: never beside the other heavy tests (MachineAlone).
    static func withPair(synchronous: Bool, _ body: (StreamingPair, DatabaseURL) async throws -> Void) async throws {
        try await MachineAlone.run { try await pair(synchronous: synchronous, body) }
    }

    private static func pair(synchronous: Bool, _ body: (StreamingPair, DatabaseURL) async throws -> Void) async throws {
        let directory = URL(fileURLWithPath: "/tmp/tw-fo-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        chmod(directory.path, 0o755)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pair = StreamingPair(directory: directory, primaryPort: ServiceProcess.freePort(), standbyPort: ServiceProcess.freePort())
        // pg_ctl is waited for on a Dispatch thread, never on the cooperative pool the other tests share.
        try await withCleanup {
            try await blockingWork { try pair.start(synchronous: synchronous) }
            let admin = try DatabaseURL(
                parsing: "postgres://postgres@127.0.0.1:\(pair.primaryPort),127.0.0.1:\(pair.standbyPort)/postgres"
                    + "?sslmode=disable&target_session_attrs=read-write")
            _ = try await CentralStore.withStore(admin) { try await $0.createDatabaseIfMissing("teamwork") }
            let url = admin.with(database: "teamwork")
            try await CentralStore.withStore(url) { try await Migrator().migrate($0) }
            try await body(pair, url)
        } cleanup: {
            _ = try? await blockingWork { pair.stop() }
        }
    }

    @Test func aPrimaryKilledWhileAWorkerSyncsLosesNothingOnceTheStandbyIsPromotedAndTheServiceFindsItByItself() async throws {
        try await Self.withPair(synchronous: true) { pair, url in
            let base = FileManager.default.temporaryDirectory.appending(path: "failover-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: base) }
            let jobs = 12
            let (world, ids, token) = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                var ids: [Int64] = []
                for number in 1...jobs {
                    ids.append(try await store.createTask(try world.task("job \(number)", team: world.red, assignee: world.ann)).id)
                }
                return (world, ids, try await store.issueToken(personID: world.ann.id, label: "").secret)
            }
            let folder = base.appending(path: "replicas")
            let service = ServiceProcess.run(databaseURL: url.connectionString, replicas: folder, log: base.path + "/service.log")
            try await service.start()
            defer { if service.isRunning { service.stopInBackground() } }
            try await expectEventually("the service generates the team's replica") {
                await SeveralInstancesTests.replicaHolds("job \(jobs)", folder: folder, team: world.red)
            }
            let home = base.appending(path: "ann")
            let worker = { (arguments: [String]) async throws -> Tool.Run in try await WorkerTool.run(home, arguments) }
            #expect(try await worker(["login", "--server", service.url, "--token", token]).status == 0)

            // Half the day before the primary dies, the other half while the standby is promoted and after.
            var accepted = 0
            for (index, id) in ids.enumerated() {
                #expect(try await worker(["complete", String(id), "--note", "done \(index + 1)"]).status == 0)
                if index == jobs / 2 {
                    try await blockingWork { try pair.killPrimary() }
                    try await blockingWork { try pair.promoteStandby() }
                }
                let synced = try await worker(["sync"])
                // While no primary answers, the push is still taken (into the replica file) or waits on the device.
                if synced.status == 0, let pushed = Self.pushed(synced.stdout) { accepted += pushed }
            }
            // Whatever waited goes now; every change the device was told was accepted reaches the new primary once.
            let drained = try await eventually(within: .seconds(60), every: .seconds(1)) {
                let synced = try await worker(["sync"])
                if synced.status == 0, let pushed = Self.pushed(synced.stdout) { accepted += pushed }
                let done = try await CentralStore.withStore(url) { store in
                    try await store.rows("SELECT count(*)::int FROM tasks WHERE status = 'completed'")[0].decode(Int.self)
                }
                return done == jobs
            }
            #expect(drained, "\(service.logTail())")
            #expect(accepted == jobs, "each completion accepted once by the service")
            let (ledger, history, primary) = try await CentralStore.withStore(url) { store in
                (
                    try await store.rows("SELECT count(*)::int, count(DISTINCT change_id)::int FROM field_changes")[0].decode(
                        (Int, Int).self),
                    try await store.rows("SELECT count(*)::int FROM task_history WHERE field_change_id IS NOT NULL")[0].decode(Int.self),
                    try await store.rows("SELECT inet_server_port()")[0].decode(Int.self)
                )
            }
            #expect(primary == pair.standbyPort, "the promoted standby is the primary now")
            #expect(ledger.0 == jobs && ledger.1 == jobs && history == jobs, "each completion once in the ledger and the history")
            try await expectEventually("verify is clean against the new primary", within: .seconds(30)) {
                try await Tool.service.run(["verify", "--database-url", url.connectionString, "--replicas", folder.path]).status == 0
            }
            // A task made on the new primary reaches the field through the same service, which found it by itself.
            _ = try await CentralStore.withStore(url) { try await $0.createTask(try world.task("after the failover", team: world.red)) }
            try await expectEventually("the service replicates from the new primary", within: .seconds(30)) {
                await SeveralInstancesTests.replicaHolds("after the failover", folder: folder, team: world.red)
            }
            // Someone the service never saw signs in: their token is checked on the new primary by the
            // endpoint's pool, which moved there too.
            let boToken = try await CentralStore.withStore(url) { try await $0.issueToken(personID: world.bo.id, label: "").secret }
            let boHome = base.appending(path: "bo")
            #expect(try await WorkerTool.run(boHome, ["login", "--server", service.url, "--token", boToken]).status == 0)
            let boSync = try await WorkerTool.run(boHome, ["sync"])
            #expect(boSync.status == 0 && !boSync.stderr.contains("positions not fetched"), "\(boSync.stdout) \(boSync.stderr)")
            #expect(service.isRunning)
        }
    }

    /// "pushed N" of a sync's summary line.
    static func pushed(_ output: String) -> Int? {
        guard let range = output.range(of: "pushed ") else { return nil }
        return Int(output[range.upperBound...].prefix { $0.isNumber })
    }
}
