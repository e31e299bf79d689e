import Foundation
import LocalPostgres
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

#if canImport(Glibc)
    import Glibc
#endif

/// The master's word is final: a change it refuses disappears from the team
/// replica and from every device, and the worker who made it reads why.
///
/// The service runs in parts (the endpoint serving; the generator and the
/// listener each run `--once` when the test says), so each step happens in
/// the order the test names, with no waiting on time.
@Suite("A refused change is undone everywhere")
struct RefusedChangeTests {

    /// What the device shows of a task.
    struct DeviceTask: Decodable {
        var assigneeId: Int64?
        var status: String
    }

    struct Scene {
        var url: DatabaseURL
        var folder: URL
        var manager: ManagerTool
        var server: ServiceProcess
        var task: Int64
        var ann: URL
        var bo: URL

        var replicas: URL { folder.appending(path: "replicas") }

        /// Runs the manager's tool; expects success.
        @discardableResult
        func ok(_ arguments: String...) async throws -> String {
            let run = try await manager.run(arguments)
            #expect(run.status == 0, "teamwork-manager \(arguments.joined(separator: " ")): \(run.stderr)")
            return run.stdout
        }

        /// `teamwork-service <command> --once` (or `verify`); returns its exit status and log.
        func service(_ command: String, once: Bool = true) async throws -> (status: Int32?, log: String) {
            let process = ServiceProcess(
                [command, "--database-url", url.connectionString, "--replicas", replicas.path]
                    + (once ? ["--once"] : []), log: folder.path + "/\(command).log")
            try await process.start(waitForPort: false)
            let status = try await process.exitStatus(within: .seconds(60))
            if status == nil { _ = try await process.stop(signal: SIGKILL) }
            return (status, process.logText)
        }

        /// The generator catches up, then the listener takes in what waits, then the generator again.
        func settle() async throws {
            for command in ["replicate", "listen", "replicate"] {
                let run = try await service(command)
                #expect(run.status == 0, "\(command) --once: \(run.log)")
            }
        }

        func onDevice(_ home: URL) async throws -> DeviceTask {
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            let run = try await WorkerTool.run(home, "show", String(task), "--json")
            return try decoder.decode(DeviceTask.self, from: Data(run.stdout.utf8))
        }

        func onMaster() async throws -> FieldTask {
            try await CentralStore.withStore(url) { try await $0.task(id: task) }
        }

        /// Field changes about the task the master's ledger has taken in, applied or not.
        func ledgerEntries() async throws -> Int {
            try await CentralStore.withStore(url) { store in
                try await store.connection.query("SELECT count(*)::int FROM field_changes WHERE task_id = \(task)", logger: store.logger)
                    .collect().first!.decode(Int.self)
            }
        }
    }

    /// Red has Ann and Bo (climbing; Ann too unless `annClimbs` is false); one
    /// free red task needs climbing. Replicas are built, the endpoint serves
    /// them, and both are signed in.
    func withClimbingTask(annClimbs: Bool = true, _ body: (_ scene: Scene) async throws -> Void) async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "refused-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let manager = ManagerTool(url)
            var scene = Scene(
                url: url, folder: folder, manager: manager,
                server: ServiceProcess.serve(databaseURL: url.connectionString, replicas: folder.appending(path: "replicas")),
                task: 0, ann: folder.appending(path: "ann"), bo: folder.appending(path: "bo"))
            try await scene.ok("person", "add", "--first", "Max", "--last", "Boss", "--email", "max@example.org", "--role", "manager")
            try await scene.ok(
                "person", "add", "--first", "Ann", "--last", "Field", "--email", "ann@example.org",
                "--skills", annClimbs ? "climbing" : "")
            try await scene.ok("person", "add", "--first", "Bo", "--last", "Rope", "--email", "bo@example.org", "--skills", "climbing")
            try await scene.ok("team", "add", "red", "--name", "Red Team")
            try await scene.ok("team", "add-member", "red", "ann@example.org")
            try await scene.ok("team", "add-member", "red", "bo@example.org")
            scene.task = try await JSONOutput.decode(
                FieldTask.self,
                try scene.ok(
                    "task", "create", "--actor", "max@example.org", "--title", "Mast inspection", "--team", "red",
                    "--requires", "climbing", "--json")
            ).id
            #expect(try await scene.service("replicate").status == 0)
            try await scene.server.start()
            defer { scene.server.stopInBackground() }
            for (home, email) in [(scene.ann, "ann@example.org"), (scene.bo, "bo@example.org")] {
                let token = try await scene.ok("person", "token", "issue", email).trimmingCharacters(in: .whitespacesAndNewlines)
                let login = try await WorkerTool.run(home, "login", "--server", scene.server.url, "--token", token)
                #expect(login.status == 0, "\(login.stderr)")
            }
            try await body(scene)
        }
    }

    @Test func aClaimTheMasterRefusesForAMissingSkillIsUndoneInTheReplicaAndOnTheDeviceWithTheReason() async throws {
        try await withClimbingTask { scene in
            // Ann's climbing certificate lapses; her replica does not know yet, so her device and the endpoint take her claim.
            try await scene.ok("person", "update", "ann@example.org", "--skills", "")
            let claim = try await WorkerTool.run(scene.ann, "claim", String(scene.task))
            #expect(claim.status == 0, "\(claim.stderr)")
            #expect(try await WorkerTool.run(scene.ann, "sync").status == 0)
            await #expect(try scene.onDevice(scene.ann).assigneeId != nil)

            // The master refuses it; the replica and Ann's device return to the master's view, with the reason.
            try await scene.settle()
            #expect(try await WorkerTool.run(scene.ann, "sync").status == 0)
            await #expect(try scene.onDevice(scene.ann).assigneeId == nil)
            let status = try await WorkerTool.run(scene.ann, "status")
            #expect(
                status.stdout.contains(": claim task \(scene.task): refused by the master: task \(scene.task) needs climbing")
                    && status.stdout.contains("Refused 2"),
                "\(status.stdout)")
            let verify = try await scene.service("verify", once: false)
            #expect(verify.status == 0, "\(verify.log)")

            // Ann cannot work on it now (the device knows her skills); Bo, who can, takes it.
            let start = try await WorkerTool.run(scene.ann, "start", String(scene.task))
            #expect(start.status == 68 && start.stderr.contains("claim task"), "\(start.stderr)")
            #expect(try await WorkerTool.run(scene.bo, "sync").status == 0)
            await #expect(try scene.onDevice(scene.bo).assigneeId == nil)
            let bo = try await WorkerTool.run(scene.bo, "claim", String(scene.task))
            #expect(bo.status == 0, "\(bo.stderr)")
            #expect(try await WorkerTool.run(scene.bo, "sync").status == 0)
            try await scene.settle()
            #expect(try await scene.onMaster().assigneeID != nil)
            #expect(try await scene.service("verify", once: false).status == 0)
        }
    }

    @Test func aStartOfATaskAManagerCancelledMeanwhileIsUndoneOnTheDevice() async throws {
        try await withClimbingTask { scene in
            try await scene.ok(
                "task", "assign", String(scene.task), "--team", "red", "--assignee", "ann@example.org", "--actor", "max@example.org")
            try await scene.settle()
            #expect(try await WorkerTool.run(scene.ann, "sync").status == 0)
            // The manager cancels; Ann, whose replica does not know yet, starts the task.
            try await scene.ok("task", "cancel", String(scene.task), "--actor", "max@example.org")
            #expect(try await WorkerTool.run(scene.ann, "start", String(scene.task)).status == 0)
            // Ann's phone watches: it sends the start at once, and hears back when the master refuses it.
            var environment = ProcessInfo.processInfo.environment
            environment["TEAMWORK_WORKER_HOME"] = scene.ann.path
            let watchLog = scene.folder.path + "/watch.log"
            let watch = try ChildProcess.spawn(
                [Tool.worker.path, "watch"],
                environment: environment, standardOutput: watchLog, standardError: watchLog)
            defer {
                kill(watch, SIGKILL)
                _ = try? ChildProcess.wait(watch)
            }
            func watched() -> String { String(decoding: FileManager.default.contents(atPath: watchLog) ?? Data(), as: UTF8.self) }
            #expect(
                try await eventually(within: .seconds(10)) {
                    try await WorkerTool.run(scene.ann, "status").stdout.contains("Queued: 0 ")
                }, "\(watched())")
            await #expect(try scene.onDevice(scene.ann).status == "in_progress")
            try await scene.settle()
            let line = "Your start of task \(scene.task) was refused: refused by the master: the task was cancelled"
            #expect(try await eventually(within: .seconds(10)) { watched().contains(line) }, "\(watched())")
            #expect(watched().components(separatedBy: line).count == 2, "one line for the refusal: \(watched())")
            await #expect(try scene.onDevice(scene.ann).status == "cancelled")
            #expect(
                try await WorkerTool.run(scene.ann, "status").stdout.contains(
                    ": start task \(scene.task): refused by the master: the task was cancelled"))
            #expect(try await scene.service("verify", once: false).status == 0)
        }
    }

    @Test func aWorkerWithoutTheSkillCannotCompleteTheTaskByClaimingStartingAndCompletingInOneSync() async throws {
        try await withClimbingTask(annClimbs: false) { scene in
            // Offline: claim, start and complete tried together, then one sync.
            var queued = 0
            for operation in ["claim", "start", "complete"] {
                let run = try await WorkerTool.run(
                    scene.ann,
                    operation == "complete"
                        ? [operation, String(scene.task), "--note", "no harness"]
                        : [operation, String(scene.task)])
                if run.status == 0 { queued += 1 }
            }
            #expect(try await WorkerTool.run(scene.ann, "sync").status == 0)
            try await scene.settle()
            // Whatever the device let through, the master took it in and holds no completion by Ann.
            #expect(try await scene.ledgerEntries() == queued)
            let master = try await scene.onMaster()
            #expect(master.status != .completed, "completed by person \(master.completedBy.map(String.init) ?? "-") who lacks climbing")
            #expect(master.assigneeID == nil)
        }
    }
}
