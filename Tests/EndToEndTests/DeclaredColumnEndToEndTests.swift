import CentralStore
import Foundation
import ReplicaGenerator
import TeamworkModel
import TeamworkTestSupport
import Testing

/// A column the declaration lets a manager set by name and shows to the worker (TaskSchema: the reference) goes
/// from `teamwork-manager --set` and a task import to the worker's device with no code of its own on the way.
@Suite("a declared column end to end")
struct DeclaredColumnEndToEndTests {
    struct DeviceTask: Decodable {
        var id: Int64
        var reference: String?
    }

    @Test func aReferenceSetByNameReachesTheWorkersDeviceAndIsClearedByAnEmptyValue() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let manager = ManagerTool(setup.url)
            let made = try await manager(
                "task", "create", "--title", "meter swap", "--team", "red", "--assignee", "ann@example.org",
                "--set", "reference=WO-2026-1182", "--json")
            #expect(made.status == 0, "\(made.stderr)")
            let id = try JSONOutput.decode(FieldTask.self, made.stdout).id
            #expect(try JSONOutput.decode(FieldTask.self, made.stdout).reference == "WO-2026-1182")
            let generator = try ReplicaGenerator(.init(databaseURL: setup.url, directory: setup.folder))
            _ = try await generator.catchUp()

            #expect(try await WorkerTool.run(setup.annHome, "login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            let device = try JSONOutput.decode([DeviceTask].self, try await WorkerTool.run(setup.annHome, "tasks", "--json").stdout)
            #expect(device.first { $0.id == id }?.reference == "WO-2026-1182")
            let shown = try await WorkerTool.run(setup.annHome, "show", String(id))
            #expect(shown.stdout.contains("reference") && shown.stdout.contains("WO-2026-1182"), "\(shown.stdout)")

            // Bad values change nothing and say why on one line.
            let version = try await CentralStore.withStore(setup.url) { try await $0.task(id: id).version }
            for (assignment, said) in [
                ("nope=1", "'nope' is not a column set by name; they are: reference"),
                ("reference=" + String(repeating: "x", count: 101), "reference has at most 100 bytes"),
                ("reference=line\nbreak", "reference is one line of text"),
                ("reference", "--set takes NAME=VALUE"),
            ] {
                let refused = try await manager("task", "update", String(id), "--set", assignment)
                #expect(refused.status != 0 && refused.stderr.contains(said), "\(assignment): \(refused.stderr)")
                #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
            }
            #expect(try await CentralStore.withStore(setup.url) { try await $0.task(id: id).version } == version)

            let cleared = try await manager("task", "update", String(id), "--set", "reference=")
            #expect(cleared.status == 0, "\(cleared.stderr)")
            _ = try await generator.catchUp()
            #expect(try await WorkerTool.run(setup.annHome, "sync").status == 0)
            let after = try JSONOutput.decode([DeviceTask].self, try await WorkerTool.run(setup.annHome, "tasks", "--json").stdout)
            #expect(after.first { $0.id == id }.map { $0.reference == nil } == true)
            let history = try await CentralStore.withStore(setup.url) { try await $0.history(taskID: id) }
            #expect(history.contains { $0.changes["reference"]?.old?.contains("WO-2026-1182") == true }, "the history says what it was")
        }
    }

    @Test func aTaskImportTakesTheColumnByItsNameAndRefusesABadValueNamingItsLine() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let manager = ManagerTool(setup.url)
            let folder = FileManager.default.temporaryDirectory.appending(path: "import-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let good = folder.appending(path: "good.csv")
            try "title,team,reference\nfence,red,PO-77\ngate,red,\n".write(to: good, atomically: true, encoding: .utf8)
            let imported = try await manager("task", "import", good.path, "--json")
            #expect(imported.status == 0, "\(imported.stderr)")
            let tasks = try JSONOutput.decode([FieldTask].self, imported.stdout)
            #expect(tasks.map(\.reference) == ["PO-77", nil])

            let bad = folder.appending(path: "bad.csv")
            try "title,team,reference\nfence,red,PO-78\ngate,red,\(String(repeating: "y", count: 101))\n".write(
                to: bad, atomically: true, encoding: .utf8)
            let refused = try await manager("task", "import", bad.path)
            #expect(refused.status != 0 && refused.stderr.contains("line 3") && refused.stderr.contains("reference"), "\(refused.stderr)")
            #expect(
                try await CentralStore.withStore(setup.url) { try await $0.listTasks() }.count == 2 + 3,
                "the three of the setup and the good file's two")
        }
    }
}
