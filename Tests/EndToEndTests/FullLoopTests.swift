import CentralStore
import Foundation
import LocalPostgres
import TeamworkModel
import TeamworkTestSupport
import Testing

/// The whole system as its users run it: only the built executables.
@Suite("Full loop end to end")
struct FullLoopTests {
    @Test func aManagersTaskIsCompletedOfflineInTheFieldAndTheManagerSeesItWithTheNote() async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "loop-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let manager = ManagerTool(url)
            func ok(_ arguments: String...) async throws -> String {
                let run = try await manager.run(arguments)
                #expect(run.status == 0, "teamwork-manager \(arguments.joined(separator: " ")): \(run.stderr)")
                return run.stdout
            }

            // The manager sets up a team and a task for Ann.
            _ = try await ok("person", "add", "--first", "Max", "--last", "Boss", "--email", "max@example.org", "--role", "manager")
            _ = try await ok("person", "add", "--first", "Ann", "--last", "Field", "--email", "ann@example.org")
            _ = try await ok("team", "add", "red", "--name", "Red Team")
            _ = try await ok("team", "add-member", "red", "ann@example.org")
            let created = try await JSONOutput.decode(
                FieldTask.self,
                try ok(
                    "task", "create", "--actor", "max@example.org", "--title", "Replace the meter at No. 12",
                    "--team", "red", "--assignee", "ann@example.org", "--json"))
            let token = try await ok("person", "token", "issue", "ann@example.org", "--label", "phone")
                .trimmingCharacters(in: .whitespacesAndNewlines)

            // The service: generator, listener and sync endpoint in one process.
            let service = ServiceProcess.run(
                databaseURL: url.connectionString, replicas: folder.appending(path: "replicas"),
                log: folder.path + "/service.log")
            try await service.start()
            defer { service.stopInBackground() }

            // Ann signs in and syncs; her task is there.
            let home = folder.appending(path: "ann")
            var tasks = Tool.Run(status: 1, stdout: "", stderr: "")
            #expect(try await WorkerTool.run(home, "login", "--server", service.url, "--token", token).status == 0)
            _ = try await eventually(within: .seconds(30), every: .milliseconds(200)) {
                _ = try await WorkerTool.run(home, "sync")
                tasks = try await WorkerTool.run(home, "tasks")
                return tasks.stdout.contains("Replace the meter")
            }
            #expect(tasks.stdout.contains("Replace the meter"), "\(tasks.stdout) \(tasks.stderr)")

            // Offline: the server is down while she works.
            #expect(try await service.stop() == 0)
            #expect(try await WorkerTool.run(home, "start", String(created.id)).status == 0)
            #expect(try await WorkerTool.run(home, "complete", String(created.id), "--note", "new meter, serial 7731").status == 0)
            #expect(try await WorkerTool.run(home, "sync").status != 0, "no server: the changes stay queued")

            // Online again: the sync sends them, the listener applies them to the master.
            try await service.start()
            #expect(try await WorkerTool.run(home, "sync").status == 0)
            struct Shown: Decodable { var task: FieldTask }
            struct ShownPerson: Decodable { var person: Person }
            var shown = try await JSONOutput.decode(Shown.self, try ok("task", "show", String(created.id), "--json")).task
            _ = try await eventually(within: .seconds(30)) {
                shown = try await JSONOutput.decode(Shown.self, try ok("task", "show", String(created.id), "--json")).task
                return shown.status == .completed
            }
            #expect(shown.status == .completed)
            #expect(shown.completionNote == "new meter, serial 7731")
            let ann = try await JSONOutput.decode(ShownPerson.self, try ok("person", "show", "ann@example.org", "--json")).person
            #expect(shown.completedBy == ann.id)
            let human = try await ok("task", "show", String(created.id))
            #expect(human.contains("completed") && human.contains("new meter, serial 7731"))
            await #expect(try ok("conflicts").contains("No open conflicts."))
            await #expect(try ok("report").contains("Field changes taken in: 2"))

            // The master's completion flows back: Ann's next sync shows it as the master's.
            #expect(try await WorkerTool.run(home, "sync").status == 0)
            #expect(try await WorkerTool.run(home, "status").stdout.contains("Queued: 0 changes"), "the queue is empty")
        }
    }

    /// Seen on main: after the dispatcher dismissed a completion the master had set aside, the
    /// worker's `status` read the same as before. Ann completes a task offline that Max cancels
    /// meanwhile; her completion is refused (by the sync endpoint: her team's copy has it cancelled),
    /// Max dismisses it with a reason, and her next sync shows that reason beside the refusal.
    @Test func aDismissedCompletionReachesTheWorkerWithTheDispatchersReason() async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "dismissed-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let manager = ManagerTool(url)
            _ = try await manager.ok("person", "add", "--first", "Max", "--last", "Boss", "--email", "max@example.org", "--role", "manager")
            _ = try await manager.ok("person", "add", "--first", "Ann", "--last", "Field", "--email", "ann@example.org")
            _ = try await manager.ok("team", "add", "red", "--name", "Red Team")
            _ = try await manager.ok("team", "add-member", "red", "ann@example.org")
            let task = try JSONOutput.decode(
                FieldTask.self,
                try await manager.ok(
                    "task", "create", "--title", "Check the pump", "--team", "red", "--assignee", "ann@example.org", "--json"))
            let token = try await manager.ok("person", "token", "issue", "ann@example.org").trimmingCharacters(in: .whitespacesAndNewlines)
            let service = ServiceProcess.run(
                databaseURL: url.connectionString, replicas: folder.appending(path: "replicas"), log: folder.path + "/service.log")
            try await service.start()
            defer { service.stopInBackground() }
            let home = folder.appending(path: "ann")
            #expect(try await WorkerTool.run(home, "login", "--server", service.url, "--token", token).status == 0)
            #expect(
                try await eventually(within: .seconds(30)) {
                    _ = try await WorkerTool.run(home, "sync")
                    return try await WorkerTool.run(home, "tasks").stdout.contains("Check the pump")
                })
            // Offline, she completes it; meanwhile Max cancels it.
            #expect(try await WorkerTool.run(home, "complete", String(task.id), "--note", "pump replaced").status == 0)
            _ = try await manager.ok("task", "cancel", String(task.id), "--actor", "max@example.org")
            var shown = ""
            func status() async throws -> String {
                shown = try await WorkerTool.run(home, "status").stdout
                return shown
            }
            #expect(
                try await eventually(within: .seconds(30)) {
                    _ = try await WorkerTool.run(home, "sync")
                    let said = try await status()
                    return said.contains("Refused") || said.contains("Rejected")
                }, "\(shown)")
            let conflicts = try JSONOutput.decode([FieldConflict].self, try await manager.ok("conflicts", "--json"))
            let conflict = try #require(conflicts.first { $0.taskID == task.id && $0.operation == "complete" })
            #expect(!(try await status()).contains("dismissed"))
            let said = try await manager.ok(
                "conflicts", "dismiss", String(conflict.id), "--reason", "the customer cancelled; no charge", "--actor", "max@example.org")
            #expect(said.contains("Ann Field reads why on their next sync"), "\(said)")
            #expect(
                try await eventually(within: .seconds(30)) {
                    _ = try await WorkerTool.run(home, "sync")
                    return try await status().contains("the dispatcher decided: dismissed: the customer cancelled; no charge")
                }, "\(shown)\n\(service.logTail(20))")
            // A reason is required, and nothing changes without one.
            let bare = try await manager.run(["conflicts", "dismiss", String(conflict.id), "--reason", "  "])
            #expect(bare.status != 0 && bare.stderr.contains("say why you dismiss it"), "\(bare.stderr)")
        }
    }
}
