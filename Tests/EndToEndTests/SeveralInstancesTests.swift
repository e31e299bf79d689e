import Foundation
import LocalPostgres
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// Several `teamwork-service run` instances on one master, for availability:
/// sharing a replica folder (one generator among them) or each with its own.
@Suite("Several service instances")
struct SeveralInstancesTests {
    static func run(_ url: DatabaseURL, folder: URL, log: String) -> ServiceProcess {
        let port = ServiceProcess.freePort()
        return ServiceProcess(
            [
                "run", "--database-url", url.connectionString, "--replicas", folder.path, "--port", String(port),
                "--sweep", "0.5",
            ], port: port, log: log)
    }

    /// The generator's role as the instance's `/health` tells it, or nil when it does not answer.
    static func role(_ service: ServiceProcess) async -> String? {
        guard let data = try? await LocalHTTP.request(url: service.url + "/health", timeout: .seconds(5)).body,
            let fields = try? JSONSerialization.jsonObject(with: data) as? [String: String]
        else { return nil }
        return fields["generator_role"]
    }

    /// Read off the cooperative threads: SQLite may wait up to its busy timeout on a running service's write.
    static func replicaHolds(_ title: String, folder: URL, team: Team) async -> Bool {
        let path = folder.appending(path: ReplicaID.team(team.id).fileName).path
        return (try? await blockingWork { try ReplicaContents.read(path: path).tasks.contains { $0.master.title == title } }) ?? false
    }

    @Test func twoInstancesOnOneFolderRunOneGeneratorAndTheOtherTakesOverWhenItIsKilled() async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "shared-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let world = try await CentralStore.withStore(url) { try await Fixtures.seed($0) }
            let instances = [
                Self.run(url, folder: folder, log: folder.path + ".a.log"), Self.run(url, folder: folder, log: folder.path + ".b.log"),
            ]
            for instance in instances { try await instance.start() }
            defer { for instance in instances where instance.isRunning { instance.stopInBackground() } }

            var roles: [String?] = []
            try await expectEventually("one active generator and one standing by") {
                roles = [await Self.role(instances[0]), await Self.role(instances[1])]
                return roles.sorted { ($0 ?? "") < ($1 ?? "") } == ["active", "standby"]
            }
            let active = roles[0] == "active" ? 0 : 1
            _ = try await CentralStore.withStore(url) { try await $0.createTask(try world.task("before the kill", team: world.red)) }
            try await expectEventually("the active instance replicates") {
                await Self.replicaHolds("before the kill", folder: folder, team: world.red)
            }

            try await instances[active].stop(signal: SIGKILL)
            let survivor = instances[1 - active]
            try await expectEventually("the standby instance takes over", within: .seconds(15)) { await Self.role(survivor) == "active" }
            _ = try await CentralStore.withStore(url) { try await $0.createTask(try world.task("after the kill", team: world.red)) }
            try await expectEventually("the survivor replicates") {
                await Self.replicaHolds("after the kill", folder: folder, team: world.red)
            }
            let metrics = try await LocalHTTP.request(url: survivor.url + "/metrics").body
            #expect(String(decoding: metrics, as: UTF8.self).contains("teamwork_generator_active 1"))
            await #expect(try survivor.stop() == 0)
            #expect(!survivor.logText.contains("Assertion failed"))
        }
    }

    @Test func aWorkerAlternatingBetweenTwoInstancesWithTheirOwnFoldersGetsEveryChangeToTheMasterOnce() async throws {
        try await TestDatabase.withFresh { url in
            let base = FileManager.default.temporaryDirectory.appending(path: "own-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: base) }
            let (world, first, second, token) = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                let first = try await store.createTask(try world.task("first job", team: world.red, assignee: world.ann))
                let second = try await store.createTask(try world.task("second job", team: world.red, assignee: world.ann))
                return (world, first.id, second.id, try await store.issueToken(personID: world.ann.id, label: "").secret)
            }
            let folders = [base.appending(path: "a"), base.appending(path: "b")]
            let instances = [
                Self.run(url, folder: folders[0], log: base.path + "/a.log"), Self.run(url, folder: folders[1], log: base.path + "/b.log"),
            ]
            for instance in instances { try await instance.start() }
            defer { for instance in instances where instance.isRunning { instance.stopInBackground() } }
            try await expectEventually("both instances generate their own folder") {
                let (a, b) = (await Self.role(instances[0]), await Self.role(instances[1]))
                return a == "active" && b == "active"
            }
            for folder in folders {
                try await expectEventually("\(folder.lastPathComponent) holds the tasks") {
                    await Self.replicaHolds("second job", folder: folder, team: world.red)
                }
            }

            let home = base.appending(path: "ann")
            let worker = { (arguments: [String]) async throws -> Tool.Run in
                try await WorkerTool.run(home, arguments)
            }
            #expect(try await worker(["login", "--server", instances[0].url, "--token", token]).status == 0)
            #expect(try await worker(["complete", String(first), "--note", "via a"]).status == 0)
            #expect(try await worker(["sync"]).stdout.contains("pushed 1"))
            try WorkerNetworkTests.moveServer(home, to: instances[1].url)
            #expect(try await worker(["complete", String(second), "--note", "via b"]).status == 0)
            let viaB = try await worker(["sync"])
            #expect(viaB.status == 0 && viaB.stdout.contains("pushed 1"), "\(viaB.stderr)")

            try await expectEventually("both completions on the master") {
                try await CentralStore.withStore(url) { store in
                    let statuses = [try await store.task(id: first).status, try await store.task(id: second).status]
                    return statuses == [.completed, .completed]
                }
            }
            let (ledger, history) = try await CentralStore.withStore(url) { store in
                (
                    try await store.rows("SELECT count(*)::int FROM field_changes")[0].decode(Int.self),
                    try await store.rows(
                        """
                        SELECT count(*)::int FROM task_history WHERE field_change_id IS NOT NULL
                        """)[0].decode(Int.self)
                )
            }
            #expect(ledger == 2 && history == 2, "each change once in the ledger and once in the history")
            for folder in folders {
                try await expectEventually("verify is clean for \(folder.lastPathComponent)") {
                    try await Tool.service.run(["verify", "--database-url", url.connectionString, "--replicas", folder.path]).status == 0
                }
            }
        }
    }

    /// Issue 65: host A answered a push 200 and kept it in its own replica file, which only A's
    /// listener reads; A is killed for good with its disk, and the worker's next sync goes to host B.
    /// The device keeps each change a host accepted until a host says the master holds it, and sends
    /// it again at each sync until then; the ledger takes it once, also when A's disk comes back.
    @Test func aCompletionAcceptedByAHostThatDiesWithItsDiskReachesTheMasterOnceThroughTheOtherHost() async throws {
        try await TestDatabase.withFresh { url in
            let base = FileManager.default.temporaryDirectory.appending(path: "lost-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: base) }
            let (world, job, token) = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                let job = try await store.createTask(try world.task("the job A took", team: world.red, assignee: world.ann))
                return (world, job.id, try await store.issueToken(personID: world.ann.id, label: "").secret)
            }
            let (folderA, folderB, keptA) = (base.appending(path: "a"), base.appending(path: "b"), base.appending(path: "a-kept"))
            // Host A: a generated folder and only the sync endpoint, so no listener of A's carries the push.
            let generated = try await Tool.service.run([
                "replicate", "--once", "--database-url", url.connectionString, "--replicas", folderA.path,
            ])
            #expect(generated.status == 0, "\(generated.stderr)")
            let portA = ServiceProcess.freePort()
            let hostA = ServiceProcess(
                ["serve", "--database-url", url.connectionString, "--replicas", folderA.path, "--port", String(portA)], port: portA,
                log: base.path + "/a.log")
            try await hostA.start()
            defer { if hostA.isRunning { hostA.stopInBackground() } }

            let home = base.appending(path: "ann")
            let worker = { (arguments: [String]) async throws -> Tool.Run in try await WorkerTool.run(home, arguments) }
            #expect(try await worker(["login", "--server", hostA.url, "--token", token]).status == 0)
            #expect(try await worker(["complete", String(job), "--note", "done before A died"]).status == 0)
            let viaA = try await worker(["sync"])
            #expect(viaA.status == 0 && viaA.stdout.contains("pushed 1"), "\(viaA.stdout) \(viaA.stderr)")
            let kept = try await worker(["status"])
            #expect(kept.stdout.contains("Sent, not yet confirmed by the master: 1 change"), "\(kept.stdout)")
            try FileManager.default.copyItem(at: folderA, to: keptA)
            _ = try await hostA.stop(signal: SIGKILL)
            try FileManager.default.removeItem(at: folderA)

            let hostB = Self.run(url, folder: folderB, log: base.path + "/b.log")
            try await hostB.start()
            defer { if hostB.isRunning { hostB.stopInBackground() } }
            try await expectEventually("B holds the team's tasks") {
                await Self.replicaHolds("the job A took", folder: folderB, team: world.red)
            }
            try WorkerNetworkTests.moveServer(home, to: hostB.url)
            let viaB = try await worker(["sync"])
            #expect(viaB.status == 0 && viaB.stdout.contains("1 sent again"), "\(viaB.stdout) \(viaB.stderr)")
            try await expectEventually("the completion A accepted reaches the master through B", within: .seconds(20)) {
                try await CentralStore.withStore(url) { try await $0.task(id: job).status == .completed }
            }

            // A's disk comes back after all: its listener takes in what A had, and the ledger keeps the change once.
            let listened = try await Tool.service.run([
                "listen", "--once", "--database-url", url.connectionString, "--replicas", keptA.path,
            ])
            #expect(listened.status == 0, "\(listened.stderr)")
            let (ledger, history) = try await CentralStore.withStore(url) { store in
                (
                    try await store.rows("SELECT count(*)::int FROM field_changes")[0].decode(Int.self),
                    try await store.rows("SELECT count(*)::int FROM task_history WHERE field_change_id IS NOT NULL")[0]
                        .decode(Int.self)
                )
            }
            #expect(ledger == 1 && history == 1, "the completion once in the ledger and once in the history")

            // Once a host says the master holds it, the device stops sending it.
            let settled = try await worker(["sync"])
            #expect(settled.status == 0 && !settled.stdout.contains("sent again"), "\(settled.stdout)")
            let status = try await worker(["status"])
            #expect(!status.stdout.contains("not yet confirmed"), "\(status.stdout)")
            #expect(try await Tool.service.run(["verify", "--database-url", url.connectionString, "--replicas", folderB.path]).status == 0)
        }
    }
}
