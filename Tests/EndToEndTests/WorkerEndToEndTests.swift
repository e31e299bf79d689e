import CentralStore
import Foundation
import LocalPostgres
import ReplicaGenerator
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// The built `teamwork-worker` against a real `teamwork-service serve` and a real PostgreSQL.
@Suite("teamwork-worker end to end")
struct WorkerEndToEndTests {
    struct Setup {
        var url: DatabaseURL
        var world: Fixtures
        var folder: URL
        var server: ServiceProcess
        var annHome: URL
        var cyHome: URL
        var annToken: String
        var cyToken: String
        var annTask: Int64
        var blueTask: Int64
    }

    func withSetup(_ body: (Setup) async throws -> Void) async throws {
        try await TestWorld.with("worker-e2e") { base, store in
            let (url, world, folder) = (base.url, base.fixtures, base.folder)
            let annTask = try await store.createTask(try world.task("fix red meter", team: world.red, assignee: world.ann))
            _ = try await store.createTask(try world.task("red floating", team: world.red))
            let blueTask = try await store.createTask(try world.task("blue job", team: world.blue, assignee: world.cy))
            let annToken = try await base.token(for: world.ann, label: "", store)
            let cyToken = try await base.token(for: world.cy, label: "", store)
            let replicas = base.replicas
            try await ReplicaGenerator(.init(databaseURL: url, directory: replicas)).rebuildAll()
            let server = ServiceProcess.serve(databaseURL: url.connectionString, replicas: replicas)
            try await server.start()
            defer { server.stopInBackground() }
            try await body(
                Setup(
                    url: url, world: world, folder: replicas, server: server,
                    annHome: folder.appending(path: "ann"), cyHome: folder.appending(path: "cy"),
                    annToken: annToken, cyToken: cyToken, annTask: annTask.id, blueTask: blueTask.id))
        }
    }

    @Test func twoWorkersOnDifferentTeamsEachSeeOnlyTheirOwnTeam() async throws {
        try await withSetup { setup in
            #expect(try await WorkerTool.run(setup.annHome, "login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            #expect(try await WorkerTool.run(setup.cyHome, "login", "--server", setup.server.url, "--token", setup.cyToken).status == 0)
            let ann = try await WorkerTool.run(setup.annHome, "tasks", "--all")
            #expect(ann.stdout.contains("fix red meter") && ann.stdout.contains("red floating") && !ann.stdout.contains("blue job"))
            let cy = try await WorkerTool.run(setup.cyHome, "tasks", "--all")
            #expect(cy.stdout.contains("blue job") && !cy.stdout.contains("red"))
            let annMine = try await WorkerTool.run(setup.annHome, "tasks")
            #expect(annMine.stdout.contains("fix red meter") && !annMine.stdout.contains("red floating"))
            // Names come from the common replica, which every worker holds too.
            let shown = try await WorkerTool.run(setup.annHome, "show", String(setup.annTask))
            #expect(shown.stdout.contains("ann Test (\(setup.world.ann.id))"), "\(shown.stdout)")
        }
    }

    @Test func workDoneOfflineArrivesOnceAtTheNextSync() async throws {
        try await withSetup { setup in
            #expect(try await WorkerTool.run(setup.annHome, "login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            try await setup.server.stop()
            let id = String(setup.annTask)
            #expect(try await WorkerTool.run(setup.annHome, "start", id).status == 0)
            #expect(try await WorkerTool.run(setup.annHome, "complete", id, "--note", "done offline").status == 0)
            let offline = try await WorkerTool.run(setup.annHome, "sync")
            #expect(offline.status == 69 && offline.stderr.contains("your changes stay queued"))
            // A new process each time: the queue lives on disk.
            #expect(try await WorkerTool.run(setup.annHome, "status").stdout.contains("Queued: 2"))
            #expect(try await WorkerTool.run(setup.annHome, "show", id).stdout.contains("done offline"))

            try await setup.server.start()
            let online = try await WorkerTool.run(setup.annHome, "sync")
            #expect(online.status == 0 && online.stdout.contains("pushed 2, 0 rejected"), "\(online.stderr)")
            #expect(try await WorkerTool.run(setup.annHome, "sync").stdout.contains("pushed 0"))
            let file = setup.folder.appending(path: ReplicaID.team(setup.world.red.id).fileName).path
            #expect(try ReplicaContents.read(path: file).acceptedWorkerChanges == 2)
            #expect(try await WorkerTool.run(setup.annHome, "status").stdout.contains("Queued: 0"))
        }
    }

    @Test func aRevokedTokenIsRefusedAndARemovedMemberLosesTheTeam() async throws {
        try await withSetup { setup in
            #expect(try await WorkerTool.run(setup.annHome, "login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            try await CentralStore.withStore(setup.url) { store in
                try await store.removeMember(teamID: setup.world.red.id, personID: setup.world.ann.id)
            }
            let after = try await WorkerTool.run(setup.annHome, "sync")
            #expect(after.status == 0 && after.stdout.contains("removed Red Team"))
            #expect(!(try await WorkerTool.run(setup.annHome, "tasks", "--all").stdout.contains("red")))

            let tokens = try await CentralStore.withStore(setup.url) { try await $0.listTokens(personID: setup.world.ann.id) }
            _ = try await CentralStore.withStore(setup.url) { try await $0.revokeToken(id: tokens[0].id) }
            let refused = try await WorkerTool.run(setup.annHome, "sync")
            #expect(refused.status == 68 && refused.stderr.contains("refused the token"))
        }
    }

    /// Requests a client other than teamwork-worker could send, against the live server process.
    @Test func theLiveServerRefusesStrangersOtherTeamsAndBadBodies() async throws {
        try await withSetup { setup in
            func send(_ path: String, token: String?, body: Data? = nil) async throws -> Int {
                try await LocalHTTP.request(
                    url: setup.server.url + path, method: body == nil ? .get : .post,
                    headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:], body: body
                ).status
            }
            let red = "/v1/replicas/team-\(setup.world.red.id)/changes"
            let blue = "/v1/replicas/team-\(setup.world.blue.id)/changes"
            let claim = Data(#"{"changes": [{"id": "x", "operation": "claim", "task_id": 1, "made_at": "2026-11-21T10:00:00Z"}]}"#.utf8)
            let statuses = [
                try await send(red, token: nil),
                try await send(red, token: TokenSecret.generate()),
                try await send(blue, token: setup.annToken),
                try await send(blue, token: setup.annToken, body: claim),
                try await send(red, token: setup.annToken, body: Data("{\"changes\": [".utf8)),
                try await send(red, token: setup.annToken, body: Data(repeating: 0x20, count: 2 << 20)),
            ]
            #expect(statuses == [401, 401, 403, 403, 400, 413])
            let file = setup.folder.appending(path: ReplicaID.team(setup.world.red.id).fileName).path
            let stored = try ReplicaContents.read(path: file).acceptedWorkerChanges
            #expect(stored == 0)
        }
    }

    @Test func aDamagedLocalCopyIsSetAsideAndRefetched() async throws {
        try await withSetup { setup in
            #expect(try await WorkerTool.run(setup.annHome, "login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            try Data("not a database".utf8).write(to: setup.annHome.appending(path: "local.sqlite"))
            let before = try await WorkerTool.run(setup.annHome, "tasks")
            #expect(before.status == 64 && before.stderr.contains("sync"))
            #expect(try await WorkerTool.run(setup.annHome, "sync").status == 0)
            #expect(try await WorkerTool.run(setup.annHome, "tasks").stdout.contains("fix red meter"))
            let files = try FileManager.default.contentsOfDirectory(atPath: setup.annHome.path)
            #expect(files.contains { $0.hasPrefix("local.sqlite.damaged-") })
        }
    }

    /// Someone's multi-line title (a CSV cell with a line break) and a tab stay on their line and in their
    /// column everywhere a person reads them (seen before: two lines in `tasks`, `show`, `watch` and the
    /// manager's confirmation; a tab broke the worker's columns).
    @Test func aTitleWithLineBreaksAndTabsPrintsOnOneLineInEveryToolAndTablesHaveHeaders() async throws {
        try await withSetup { setup in
            let manager = ManagerTool(setup.url)
            let title = "Pump house\nsecond line\r\nthird\tcolumn"
            let created = try await manager(
                "task", "create", "--title", title, "--team", "red", "--assignee", "ann@example.org",
                "--description", "Line one\nLine two")
            #expect(created.status == 0, "\(created.stderr)")
            #expect(created.stdout.split(separator: "\n").count == 1, "one confirmation line: \(created.stdout)")
            #expect(created.stdout.contains("Pump house second line third column"), "\(created.stdout)")
            let id = try #require(
                created.stdout.split(separator: " ").compactMap { Int64($0.trimmingCharacters(in: .punctuationCharacters)) }.first)
            #expect(
                try await Tool.service.run([
                    "replicate", "--once", "--database-url", setup.url.connectionString,
                    "--replicas", setup.folder.path,
                ]).status == 0)
            #expect(
                try await WorkerTool.run(setup.annHome, ["login", "--server", setup.server.url], input: setup.annToken + "\n").status == 0)

            let tasks = try await WorkerTool.run(setup.annHome, "tasks")
            let lines = tasks.stdout.split(separator: "\n")
            #expect(
                lines.first?.hasPrefix("ID  WHEN") == true && lines.first?.contains("TITLE") == true
                    && lines.first?.hasSuffix("WHERE") == true, "a header: \(tasks.stdout)")
            let row = try #require(lines.first { $0.hasPrefix("\(id) ") }, "\(tasks.stdout)")
            #expect(row.contains("Pump house second line third column") && !tasks.stdout.contains("\t"), "\(tasks.stdout)")
            #expect(lines.count == 3, "a header and Ann's two tasks: \(tasks.stdout)")
            let headerColumn = lines[0].range(of: "TITLE").map { lines[0].distance(from: lines[0].startIndex, to: $0.lowerBound) }
            let titleColumn = row.range(of: "Pump").map { row.distance(from: row.startIndex, to: $0.lowerBound) }
            #expect(headerColumn != nil && headerColumn == titleColumn, "the title under its header: \(tasks.stdout)")

            let show = try await WorkerTool.run(setup.annHome, "show", String(id))
            let titleLine = try #require(show.stdout.split(separator: "\n").first { $0.hasPrefix("title:") })
            #expect(titleLine.hasSuffix("Pump house second line third column"), "\(show.stdout)")
            #expect(!show.stdout.contains("\nsecond line"), "\(show.stdout)")
            #expect(
                show.stdout.contains("description: Line one\n             Line two"),
                "a description keeps its lines, indented: \(show.stdout)")
        }
    }

    @Test func badInputGetsOneLineAndAnExitCode() async throws {
        try await withSetup { setup in
            let notSignedIn = try await WorkerTool.run(setup.annHome, "sync")
            #expect(notSignedIn.status == 64 && notSignedIn.stderr.contains("not signed in"))
            #expect(try await WorkerTool.run(setup.annHome, "login", "--server", setup.server.url, "--token", "nope").status == 65)
            #expect(try await WorkerTool.run(setup.annHome, "login", "--server", "ftp://x", "--token", setup.annToken).status == 65)
            #expect(try await WorkerTool.run(setup.annHome, "login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            let unknown = try await WorkerTool.run(setup.annHome, "start", "999999")
            #expect(unknown.status == 67 && unknown.stderr.split(separator: "\n").count == 1)
            #expect(try await WorkerTool.run(setup.annHome, "complete", "twelve").status == 64, "a task id is a number")
            #expect(try await WorkerTool.run(setup.annHome, "checkin", "--lat", "91", "--lon", "0").status == 65)
            let config = setup.annHome.appending(path: "config.json").path
            let mode = try FileManager.default.attributesOfItem(atPath: config)[.posixPermissions] as? Int
            #expect(mode == 0o600)
        }
    }
}
