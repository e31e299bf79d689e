import CentralStore
import EventListener
import Foundation
import GRDB
import LocalPostgres
import ReplicaGenerator
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing
import WorkerClient

#if canImport(Glibc)
    import Glibc
#endif

/// A worker on a bad network, or against a server in trouble, always gets an
/// answer and never loses queued work; one change never blocks the device.
@Suite("teamwork-worker on a bad network")
struct WorkerNetworkTests {

    static func queuedCount(_ home: URL) async throws -> String {
        try await WorkerTool.run(home, "status").stdout
    }

    /// Points the signed-in device at another server address.
    static func moveServer(_ home: URL, to address: String) throws {
        let path = home.appending(path: "config.json")
        var config = try JSONSerialization.jsonObject(with: Data(contentsOf: path)) as! [String: String]
        config["server"] = address
        try JSONSerialization.data(withJSONObject: config).write(to: path)
    }

    @Test func aServerThatAcceptsButNeverAnswersEndsSyncWithExit69WithinTheTimeoutAndKeepsTheQueue() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            #expect(try await WorkerTool.run(setup.annHome, "login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            #expect(try await WorkerTool.run(setup.annHome, "start", String(setup.annTask)).status == 0)
            let (port, descriptor) = ServiceProcess.silentPort()
            defer { close(descriptor) }
            try Self.moveServer(setup.annHome, to: "http://127.0.0.1:\(port)")

            let started = ContinuousClock.now
            let silent = try await WorkerTool.run(setup.annHome, "sync", "--timeout", "2")
            let took = ContinuousClock.now - started
            #expect(silent.status == 69, "\(silent.stderr)")
            #expect(silent.stderr.contains("did not answer") && silent.stderr.contains("stay queued"), "\(silent.stderr)")
            #expect(silent.stderr.split(separator: "\n").count == 1)
            #expect(took < .seconds(10), "gave up after \(took), not within the 2 s timeout")
            await #expect(try Self.queuedCount(setup.annHome).contains("Queued: 1"))

            try Self.moveServer(setup.annHome, to: setup.server.url)
            let back = try await WorkerTool.run(setup.annHome, "sync")
            #expect(back.status == 0 && back.stdout.contains("pushed 1"), "\(back.stderr)")
        }
    }

    /// While the master is away, a device the server checked before keeps syncing: its work is stored in
    /// its replica (and reaches the master when it is back); a device never seen cannot sign in (69) and
    /// keeps nothing.
    @Test func aServerWhoseCentralStoreIsAwayTakesAKnownDevicesWorkAndAsksANewOneToWait() async throws {
        try await PrivateCluster.with("503") { own in
            let (directory, url) = (own.directory, own.url)
            let (task, token, newcomer) = try await CentralStore.withStore(url) { store in
                try await Migrator().migrate(store)
                let world = try await Fixtures.seed(store)
                let task = try await store.createTask(try world.task("red job", team: world.red, assignee: world.ann))
                return (
                    task.id, try await store.issueToken(personID: world.ann.id, label: "").secret,
                    try await store.issueToken(personID: world.bo.id, label: "").secret
                )
            }
            let replicas = directory.appending(path: "replicas")
            try await ReplicaGenerator(.init(databaseURL: url, directory: replicas)).rebuildAll()
            let server = ServiceProcess.serve(databaseURL: url.connectionString, replicas: replicas)
            try await server.start()
            defer { server.stopInBackground() }
            let home = directory.appending(path: "ann")
            #expect(try await WorkerTool.run(home, "login", "--server", server.url, "--token", token).status == 0)

            try await own.stop()
            #expect(try await WorkerTool.run(home, "start", String(task)).status == 0)
            let away = try await WorkerTool.run(home, "sync")
            #expect(away.status == 0 && away.stdout.contains("pushed 1"), "\(away.stdout) \(away.stderr)")
            #expect(away.stderr.contains("positions not fetched"), "the one thing the master alone knows: \(away.stderr)")
            await #expect(try Self.queuedCount(home).contains("Queued: 0"))
            let bo = directory.appending(path: "bo")
            let refused = try await WorkerTool.run(bo, ["login", "--server", server.url], input: newcomer + "\n")
            #expect(refused.status == 69 && refused.stderr.contains("503") && refused.stderr.contains("not signed in"), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: bo.appending(path: "local.sqlite").path))

            try await own.start()
            try await expectEventually("the start stored during the outage reaches the master", within: .seconds(40)) {
                _ = try? await EventListener(.init(databaseURL: url, directory: replicas)).once()
                return (try? await CentralStore.withStore(url) { try await $0.task(id: task).status }) == .inProgress
            }
            let back = try await WorkerTool.run(home, "sync")
            #expect(back.status == 0 && !back.stderr.contains("positions not fetched"), "\(back.stderr)")
        }
    }

    @Test func aWorkerWithOnlyTeamTasksChecksInAndKeepsGettingNewWork() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            #expect(try await WorkerTool.run(setup.annHome, "login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            #expect(try await WorkerTool.run(setup.annHome, "checkin", "--lat", "51.5", "--lon", "-0.12").status == 0)
            let first = try await WorkerTool.run(setup.annHome, "sync")
            #expect(first.status == 0 && first.stdout.contains("pushed 1, 0 rejected"), "\(first.stdout) \(first.stderr)")
            let red = setup.folder.appending(path: ReplicaID.team(setup.world.red.id).fileName).path
            #expect(try ReplicaContents.read(path: red).acceptedWorkerChanges == 1, "the check-in went to a replica that exists")

            let later = try await CentralStore.withStore(setup.url) { store in
                try await store.createTask(
                    try setup.world.task("assigned after the check-in", team: setup.world.red, assignee: setup.world.ann))
            }
            _ = try await ReplicaGenerator(.init(databaseURL: setup.url, directory: setup.folder)).catchUp()
            #expect(try await WorkerTool.run(setup.annHome, "sync").status == 0)
            #expect(try await WorkerTool.run(setup.annHome, "tasks").stdout.contains("assigned after the check-in"))
            #expect(try await WorkerTool.run(setup.annHome, "start", String(later.id)).status == 0)
            await #expect(try Self.queuedCount(setup.annHome).contains("Queued: 1"))
            #expect(try await WorkerTool.run(setup.annHome, "sync").stdout.contains("pushed 1"))
        }
    }

    @Test func aCheckinQueuedForAReplicaThatNeverAppearsMovesToOneThatExists() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            #expect(try await WorkerTool.run(setup.annHome, "login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            // A device of the earlier release queued its check-ins for the personal replica, which was never generated.
            let store = try LocalStore(path: setup.annHome.appending(path: "local.sqlite").path)
            _ = try store.enqueue(
                .checkin, taskID: nil, in: "person-\(setup.world.ann.id)", by: setup.world.ann.id,
                latitude: 1, longitude: 2)
            _ = try store.enqueue(.start, taskID: setup.annTask, in: "team-\(setup.world.red.id)", by: setup.world.ann.id)
            let sync = try await WorkerTool.run(setup.annHome, "sync")
            #expect(sync.status == 0 && sync.stdout.contains("pushed 2, 0 rejected"), "\(sync.stdout) \(sync.stderr)")
            await #expect(try Self.queuedCount(setup.annHome).contains("Queued: 0"))
        }
    }

    @Test func aPushWhoseAnswerWasLostIsSentAgainAndCountedOnce() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            #expect(try await WorkerTool.run(setup.annHome, "login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            #expect(try await WorkerTool.run(setup.annHome, "complete", String(setup.annTask), "--note", "sent twice").status == 0)
            let local = setup.annHome.appending(path: "local.sqlite")
            let beforeAnswer = setup.annHome.appending(path: "before-answer.sqlite")
            try FileManager.default.copyItem(at: local, to: beforeAnswer)
            #expect(try await WorkerTool.run(setup.annHome, "sync").stdout.contains("pushed 1"))
            // The answer never reached the device: it still holds the change as queued.
            try FileManager.default.removeItem(at: local)
            try FileManager.default.moveItem(at: beforeAnswer, to: local)
            await #expect(try Self.queuedCount(setup.annHome).contains("Queued: 1"))
            let again = try await WorkerTool.run(setup.annHome, "sync")
            #expect(again.status == 0 && again.stdout.contains("pushed 1, 0 rejected"), "\(again.stderr)")
            let red = setup.folder.appending(path: ReplicaID.team(setup.world.red.id).fileName).path
            #expect(try ReplicaContents.read(path: red).acceptedWorkerChanges == 1, "stored once")
            await #expect(try Self.queuedCount(setup.annHome).contains("Queued: 0"))
        }
    }

    /// A task column this tool does not declare means a newer teamwork-worker wrote the file: refused and left
    /// as it is (nothing set aside, nothing rewritten without it).
    @Test func aDeviceFileWithATaskColumnThisToolDoesNotDeclareIsRefusedAndLeftAsItIs() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            #expect(try await WorkerTool.run(setup.annHome, "login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            let file = setup.annHome.appending(path: "local.sqlite").path
            let queue = try DatabaseQueue(path: file)
            try await queue.write { try $0.execute(sql: "ALTER TABLE tasks ADD COLUMN from_a_newer_tool TEXT") }
            try queue.close()
            let refused = try await WorkerTool.run(setup.annHome, "tasks")
            #expect(refused.status != 0 && refused.stderr.contains("written by a newer teamwork-worker"), "\(refused.stderr)")
            let files = try FileManager.default.contentsOfDirectory(atPath: setup.annHome.path)
            #expect(!files.contains { $0.contains("damaged") }, "nothing set aside")
        }
    }

    @Test func aDeviceDatabaseOfTheFirstReleaseKeepsItsQueuedWorkAcrossTheUpgrade() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            // The device as the first release left it: schema version 1, signed in, one completion queued offline.
            try FileManager.default.createDirectory(at: setup.annHome, withIntermediateDirectories: true)
            let queue = try DatabaseQueue(path: setup.annHome.appending(path: "local.sqlite").path)
            let red = "team-\(setup.world.red.id)"
            try await queue.write { db in
                try db.execute(sql: LocalStore.firstSchema)
                try db.execute(sql: "PRAGMA user_version = 1")
                try db.execute(sql: "INSERT INTO replicas (name, kind, title, slug) VALUES (?, 'team', 'Red', 'red')", arguments: [red])
                try db.execute(sql: "INSERT INTO settings VALUES ('person_id', ?)", arguments: [String(setup.world.ann.id)])
                // A task as the first release kept it: none of the columns declared since (TaskSchema).
                try db.execute(
                    sql: """
                        INSERT INTO tasks (replica, id, title, description, priority, team_id, assignee_id, status)
                        VALUES (?, ?, 'as the first release kept it', '', 'normal', ?, ?, 'assigned')
                        """, arguments: [red, setup.annTask, setup.world.red.id, setup.world.ann.id])
                try db.execute(
                    sql: """
                        INSERT INTO outbox (change_id, replica, operation, task_id, note, made_at)
                        VALUES ('old-release-1', ?, 'complete', ?, 'queued before the upgrade', 1763700000000)
                        """, arguments: [red, setup.annTask])
            }
            try queue.close()
            let config = ["server": setup.server.url, "token": setup.annToken]
            try JSONSerialization.data(withJSONObject: config).write(to: setup.annHome.appending(path: "config.json"))

            await #expect(try Self.queuedCount(setup.annHome).contains("Queued: 1"), "the queue survives the upgrade")
            // The columns declared since are added to the file; its task reads before the next sync fills them.
            let before = try JSONOutput.decode(
                [LocalTask].self, try await WorkerTool.run(setup.annHome, ["tasks", "--all", "--json"]).stdout)
            #expect(before.map(\.title) == ["as the first release kept it"] && before.first?.version == 0)
            let sync = try await WorkerTool.run(setup.annHome, "sync")
            #expect(sync.status == 0 && sync.stdout.contains("pushed 1, 0 rejected"), "\(sync.stdout) \(sync.stderr)")
            let file = setup.folder.appending(path: ReplicaID.team(setup.world.red.id).fileName).path
            #expect(try ReplicaContents.read(path: file).acceptedWorkerChanges == 1)
            let after = try JSONOutput.decode(
                [LocalTask].self, try await WorkerTool.run(setup.annHome, ["tasks", "--all", "--json"]).stdout)
            let task = try #require(after.first { $0.id == setup.annTask })
            #expect(task.title != "as the first release kept it" && task.version >= 1 && task.createdAt.timeIntervalSince1970 > 0)
            let files = try FileManager.default.contentsOfDirectory(atPath: setup.annHome.path)
            #expect(!files.contains { $0.contains("damaged") }, "nothing set aside")
        }
    }
}
