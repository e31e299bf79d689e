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
}
