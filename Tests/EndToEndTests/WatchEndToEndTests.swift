import CentralStore
import Foundation
import LocalPostgres
import TeamworkModel
import TeamworkTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `teamwork-worker watch` against a real `teamwork-service run`: new work
/// reaches the device without anyone running sync, work done on the device
/// leaves as soon as it is queued, and a server restart is ridden out.
@Suite("teamwork-worker watch end to end")
struct WatchEndToEndTests {

    /// Ann's phone watching red through a real `teamwork-service run`: the
    /// people, team and a first task made with the manager's tool, the service
    /// started, Ann signed in and `teamwork-worker watch` running. Ends the
    /// watcher (unless the test did) and the service whatever happens.
    final class Scene: @unchecked Sendable {
        let url: DatabaseURL
        let manager: ManagerTool
        let service: ServiceProcess
        let home: URL
        let watch: pid_t
        let watchLog: String
        var watchStopped = false

        init(url: DatabaseURL, manager: ManagerTool, service: ServiceProcess, home: URL, watch: pid_t, watchLog: String) {
            (self.url, self.manager, self.service, self.home, self.watch, self.watchLog) = (url, manager, service, home, watch, watchLog)
        }

        /// Runs the manager's tool; expects success and returns what it printed.
        func ok(_ arguments: String...) async throws -> String { try await Scene.ok(manager, arguments) }

        static func ok(_ manager: ManagerTool, _ arguments: [String]) async throws -> String {
            let run = try await manager.run(arguments)
            #expect(run.status == 0, "\(arguments): \(run.stderr)")
            return run.stdout
        }

        /// What the watcher has printed so far.
        func watched() -> String { String(decoding: FileManager.default.contents(atPath: watchLog) ?? Data(), as: UTF8.self) }
    }

    static func withWatchingDevice(
        _ url: DatabaseURL, in folder: URL, firstTask: String,
        _ body: (Scene) async throws -> Void
    ) async throws {
        let manager = ManagerTool(url)
        func ok(_ arguments: String...) async throws -> String { try await Scene.ok(manager, arguments) }
        _ = try await ok("person", "add", "--first", "Max", "--last", "Boss", "--email", "max@example.org", "--role", "manager")
        _ = try await ok("person", "add", "--first", "Ann", "--last", "Field", "--email", "ann@example.org")
        _ = try await ok("team", "add", "red", "--name", "Red Team")
        _ = try await ok("team", "add-member", "red", "ann@example.org")
        _ = try await ok(
            "task", "create", "--actor", "max@example.org", "--title", firstTask, "--team", "red", "--assignee", "ann@example.org")
        let token = try await ok("person", "token", "issue", "ann@example.org", "--label", "phone").trimmingCharacters(
            in: .whitespacesAndNewlines)

        let service = ServiceProcess.run(
            databaseURL: url.connectionString, replicas: folder.appending(path: "replicas"),
            log: folder.path + "/service.log")
        try await service.start()
        defer { service.stopInBackground() }

        let home = folder.appending(path: "ann")
        #expect(
            try await eventually(within: .seconds(10)) {
                try await WorkerTool.run(home, "login", "--server", service.url, "--token", token).status == 0
            })
        var environment = ProcessInfo.processInfo.environment
        environment["TEAMWORK_WORKER_HOME"] = home.path
        let watchLog = folder.path + "/watch.log"
        let watch = try ChildProcess.spawn(
            [Tool.worker.path, "watch"],
            environment: environment, standardOutput: watchLog, standardError: watchLog)
        let scene = Scene(url: url, manager: manager, service: service, home: home, watch: watch, watchLog: watchLog)
        // SIGKILL always ends it, so this wait is short.
        defer {
            if !scene.watchStopped {
                kill(watch, SIGKILL)
                _ = try? ChildProcess.wait(watch)
            }
        }
        // The watcher has synced and waits on the service for news: the scene starts from there.
        let port = try #require(service.port)
        #expect(
            try await eventually(within: .seconds(20)) {
                let metrics = try? await LocalHTTP.request(port: port, "/metrics", timeout: .seconds(5)).text
                return metrics?.split(separator: "\n").contains { $0.hasPrefix("teamwork_sync_open_waits ") && !$0.hasSuffix(" 0") } == true
            }, "\(scene.watched())")
        try await body(scene)
    }

    @Test func aWatchingDeviceGetsNewWorkAtOnceSendsItsWorkAtOnceAndRidesOutARestart() async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "watch-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            try await Self.withWatchingDevice(url, in: folder, firstTask: "First job") { scene in
                let (ok, watched, home, service, watch) = (scene.ok, scene.watched, scene.home, scene.service, scene.watch)
                // A manager assigns new work: it reaches the device with nobody running sync.
                let created = try await JSONOutput.decode(
                    FieldTask.self,
                    try ok(
                        "task", "create", "--actor", "max@example.org", "--title", "Burst main on Elm St", "--team", "red",
                        "--assignee", "ann@example.org", "--priority", "urgent", "--json"))
                #expect(
                    try await eventually(within: .seconds(5)) {
                        try await WorkerTool.run(home, "tasks").stdout.contains("Burst main on Elm St")
                    }, "\(watched())")
                #expect(
                    try await eventually(within: .seconds(2)) {
                        watched().contains("New task \(created.id) for you: Burst main on Elm St, urgent")
                    }, "\(watched())")

                // The window moves, the site is set and the priority drops: the line names each, on the task's clock,
                // and the device's list says where the work is.
                let site = try JSONOutput.decode(
                    Location.self,
                    try await ok(
                        "location", "add", "--name", "Pump house", "--street", "Elm St 4", "--city", "Solna", "--lat", "59.36", "--lon",
                        "18.0", "--json"))
                _ = try await ok(
                    "task", "update", String(created.id), "--actor", "max@example.org", "--window", "2026-12-01T09:00/PT2H",
                    "--priority", "high", "--location", String(site.id))
                #expect(
                    try await eventually(within: .seconds(5)) {
                        watched().contains("Task \(created.id) changed (window 2026-12-01 09:00-11:00")
                            && watched().contains("priority high, site Pump house, Elm St 4, Solna")
                    }, "\(watched())")
                #expect(try await WorkerTool.run(home, "tasks").stdout.contains("Pump house, Elm St 4, Solna"))

                // Work done on the device leaves at once; the listener puts it on the master.
                #expect(try await WorkerTool.run(home, "complete", String(created.id), "--note", "valve replaced").status == 0)
                #expect(
                    try await eventually(within: .seconds(5)) {
                        try await CentralStore.withStore(url) { try await $0.task(id: created.id) }.status == .completed
                    }, "\(watched())")

                // The service restarts (its open waits end promptly on SIGTERM); the watcher rides it out.
                let stopping = ContinuousClock.now
                #expect(try await service.stop() == 0, "\(service.logTail(3000))")
                #expect(ContinuousClock.now - stopping < .seconds(10), "\(service.logTail(3000))")
                #expect(try await eventually(within: .seconds(5)) { watched().contains("Offline:") }, "\(watched())")
                let whileDown = try await JSONOutput.decode(
                    FieldTask.self,
                    try ok(
                        "task", "create", "--actor", "max@example.org", "--title", "Made while the server was down", "--team", "red",
                        "--assignee", "ann@example.org", "--json"))
                try await service.start()
                #expect(
                    try await eventually(within: .seconds(20)) {
                        try await WorkerTool.run(home, "tasks").stdout.contains("Made while the server was down")
                    }, "\(watched())")
                // The device's file holds the task a moment before the watcher has printed its lines.
                #expect(
                    try await eventually(within: .seconds(5)) {
                        watched().contains("Back online.") && watched().contains("New task \(whileDown.id) for you")
                    }, "\(watched())")

                // The device ends equal to the master.
                let master = try await CentralStore.withStore(url) { try await $0.listTasks() }
                let device = try JSONOutput.decode([DeviceTask].self, try await WorkerTool.run(home, "tasks", "--all", "--json").stdout)
                #expect(
                    Dictionary(uniqueKeysWithValues: device.map { ($0.id, $0.status) })
                        == Dictionary(uniqueKeysWithValues: master.map { ($0.id, $0.status.rawValue) }))

                kill(watch, SIGTERM)
                // Never a blocking wait here: a watcher that does not stop must fail this test, not freeze the run.
                let status = try await ChildProcess.wait(watch, within: .seconds(10))
                scene.watchStopped = status != nil
                #expect(status == 0, "\(watched())")
                #expect(watched().contains("Stopped."))
            }
        }
    }

    @Test func aWatchingDeviceRidesOutPostgreSQLRestartingAndEndsEqualToTheMaster() async throws {
        try await PrivateCluster.with("watch-pg") { own in
            let url = own.url
            let folder = own.directory
            try await CentralStore.withStore(url) { try await Migrator().migrate($0) }
            try await Self.withWatchingDevice(url, in: folder, firstTask: "Before") { scene in
                let (manager, watched, home, service) = (scene.manager, scene.watched, scene.home, scene.service)
                // PostgreSQL stops under the service and the watcher, then comes back.
                try await own.stop()
                #expect(
                    try await eventually(within: .seconds(20)) {
                        service.logText.contains("retrying") || service.logText.contains("reconnecting")
                    }, "the service met the outage: \(service.logTail(2000))")
                try await own.start()
                #expect(
                    try await eventually(within: .seconds(20)) {
                        (try? await manager.run([
                            "task", "create", "--actor", "max@example.org", "--title", "After the restart", "--team", "red",
                            "--assignee", "ann@example.org",
                        ]))?.status == 0
                    })
                #expect(
                    try await eventually(within: .seconds(40)) {
                        try await WorkerTool.run(home, "tasks").stdout.contains("After the restart")
                    }, "\(watched())\n\(service.logTail(2000))")
                #expect(service.isRunning)

                let master = try await CentralStore.withStore(url) { try await $0.listTasks() }
                let device = try JSONOutput.decode([DeviceTask].self, try await WorkerTool.run(home, "tasks", "--all", "--json").stdout)
                #expect(Set(device.map(\.id)) == Set(master.map(\.id)))
            }
        }
    }

    struct DeviceTask: Decodable {
        var id: Int64
        var status: String
    }
}
