import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// What a worker used on a job, from the worker's device to the master: recorded offline
/// (`teamwork-worker used`), corrected, checked on the device with the rules the master
/// uses, taken in once, priced with the catalogue of the day and shown to the manager.
@Suite("Materials used, end to end")
struct MaterialsEndToEndTests {
    /// The manager's tool, a service pass (`replicate` or `listen`, once) and Ann's device.
    static func tools(
        _ setup: WorkerEndToEndTests.Setup
    ) -> (ManagerTool, (String) async throws -> Void, (String...) async throws -> Tool.Run) {
        let service: (String) async throws -> Void = { command in
            let run = try await Tool.service.run([
                command, "--once", "--database-url", setup.url.connectionString, "--replicas", setup.folder.path,
            ])
            #expect(run.status == 0, "\(command) --once: \(run.stderr)")
        }
        return (ManagerTool(setup.url), service, { arguments in try await WorkerTool.run(setup.annHome, arguments) })
    }

    @Test func partsAndLinesRecordedOfflineArriveOnceWithTheirPricesAndHostileQuantitiesChangeNothing() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let (manager, service, worker) = Self.tools(setup)

            _ = try await manager.ok(
                "part", "add", "--code", "CBL-3", "--name", "Cable 3x2.5", "--unit", "m", "--price", "12.50", "--currency", "SEK")
            _ = try await manager.ok(
                "part", "add", "--code", "FUSE-16", "--name", "Fuse 16 A", "--unit", "piece", "--price", "3.5", "--currency", "SEK")
            _ = try await manager.ok("part", "add", "--code", "OLD-1", "--name", "Old meter seal", "--unit", "piece")
            let made = try await manager.ok(
                "task", "create", "--title", "rewire board", "--team", "red", "--assignee", "ann@example.org", "--json")
            let task = try JSONOutput.decode(FieldTask.self, made)
            let id = String(task.id)
            try await service("replicate")
            #expect(try await worker("login", "--server", setup.server.url, "--token", setup.annToken).status == 0)

            // Offline from here on: a part, a correction, a line of her own, one removed again.
            try await setup.server.stop()
            #expect(try await worker("start", id).status == 0)
            for arguments in [
                ["used", id, "CBL-3", "20"], ["used", id, "cbl-3", "12.5"], ["used", id, "FUSE-16", "3"],
                ["used", id, "--line", "Cable ties", "40"], ["used", id, "OLD-1", "1"], ["used", id, "OLD-1", "0"],
            ] {
                let run = try await WorkerTool.run(setup.annHome, arguments)
                #expect(run.status == 0, "\(arguments): \(run.stderr)")
            }
            // Hostile quantities and lines are bad input (65): one line, nothing queued.
            for (arguments, message) in [
                (["used", id, "CBL-3", "-1"], "a quantity is a number from 0 to 100000"),
                (["used", id, "CBL-3", "NaN"], "a quantity is a number"),
                (["used", id, "CBL-3", "1e9"], "a quantity is a number"),
                (["used", id, "CBL-3", "100000.5"], "a quantity is a number"),
                (["used", id, "CBL-3", "0.0001"], "a quantity is a number"),
                (["used", id, "../etc", "1"], "a part's code is"),
                (["used", id, "--line", "two\nlines", "1"], "described in one line"),
                (["used", id, "--line", String(repeating: "x", count: 201), "1"], "described in one line"),
            ] {
                let refused = try await WorkerTool.run(setup.annHome, arguments)
                #expect(
                    refused.status == TeamworkError.Code.invalidInput.exitStatus && refused.stderr.contains(message)
                        && refused.stderr.split(separator: "\n").count == 1, "\(arguments): \(refused.status) \(refused.stderr)")
            }
            let mine = try await worker("used", id)
            #expect(
                mine.stdout.contains("cbl-3") && mine.stdout.contains("12.5") && mine.stdout.contains("Cable ties")
                    && !mine.stdout.contains("OLD-1") && mine.stdout.contains("not yet"), "\(mine.stdout)")
            let status = try await worker("status")
            #expect(status.stdout.contains("Queued: 7 "), "a start and six uses: \(status.stdout)")

            // Back online: synced twice and taken in twice; nothing doubles.
            try await setup.server.start()
            #expect(try await worker("sync").status == 0)
            #expect(try await worker("sync").status == 0)
            try await service("listen")
            try await service("listen")
            let lines = try await CentralStore.withStore(setup.url) { try await $0.materials(ofTask: task.id) }
            #expect(
                lines.map { "\($0.partCode ?? $0.name) \($0.quantity) \($0.total ?? "-")" }
                    == ["CBL-3 12.5 156.25", "FUSE-16 3 10.50", "Cable ties 40 -"], "\(lines)")
            #expect(lines.allSatisfy { $0.personID == setup.world.ann.id })
            let shown = try await manager.ok("task", "show", id)
            #expect(
                shown.contains("Cable 3x2.5") && shown.contains("Total SEK: 166.75") && shown.contains("1 line without a price"), "\(shown)"
            )
            // Every use is in the ledger once.
            let ledger = try await CentralStore.withStore(setup.url) { store in
                try await store.rows("SELECT count(*)::int FROM field_changes WHERE task_id = \(task.id) AND operation = 'use'")
                    .map { try $0.decode(Int.self) }
            }
            #expect(ledger == [6])

            // A price changed later does not change what this job cost.
            _ = try await manager.ok("part", "update", "CBL-3", "--price", "99", "--currency", "SEK")
            let again = try await CentralStore.withStore(setup.url) { try await $0.materials(ofTask: task.id) }
            #expect(again.first?.total == "156.25")

            // Once completed, what was used stands: the device refuses another line before queueing it.
            #expect(try await worker("complete", id, "--note", "rewired").status == 0)
            let late = try await worker("used", id, "CBL-3", "30")
            #expect(
                late.status == TeamworkError.Code.conflict.exitStatus && late.stderr.contains("reopen it to change what was used"),
                "\(late.stderr)")

            // A manager corrects the finished job: her cable line, and a line removed; the history names them.
            #expect(try await worker("sync").status == 0)
            try await service("listen")
            let corrected = try await manager.ok("task", "used", id, "CBL-3", "10", "--actor", "max@example.org")
            #expect(corrected.contains("Total SEK: 135.50"), "10 m at today's 99 SEK? no: \(corrected)")
            _ = try await manager.ok("task", "used", id, "--line", "cable TIES", "0", "--actor", "max@example.org")
            let after = try await CentralStore.withStore(setup.url) { try await $0.materials(ofTask: task.id) }
            #expect(after.map { "\($0.partCode ?? $0.name) \($0.quantity)" } == ["CBL-3 10", "FUSE-16 3"], "\(after)")
            let history = try await manager.ok("task", "history", id)
            #expect(history.contains("max Test") && history.contains("12.5 CBL-3") && history.contains("10 CBL-3"), "\(history)")
            for (arguments, code) in [
                (["task", "used", id, "CBL-3", "-2"], TeamworkError.Code.invalidInput),
                (["task", "used", id, "CBL-3", "1e2"], .invalidInput),
                (["task", "used", id, "NOPE-9", "1"], .notFound),
                (["task", "used", id, "--line", "two\nlines", "1"], .invalidInput),
            ] {
                let refused = try await manager.run(arguments + ["--actor", "max@example.org"])
                #expect(refused.status == code.exitStatus && refused.errorLines.count == 1, "\(arguments): \(refused.stderr)")
            }
            #expect(
                try await CentralStore.withStore(setup.url) { try await $0.materials(ofTask: task.id) } == after, "refusals changed nothing"
            )
        }
    }

    /// The catalogue travels in the common data: the device refuses a part it does not hold before
    /// queueing it; a retired one is set aside by the master for the dispatcher, with its reason, as
    /// is a 101st line; a part added later reaches the device.
    @Test func theCatalogueOnTheDeviceRefusesUnknownPartsAndTheMasterSetsAsideWhatItLearnedLater() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let (manager, service, worker) = Self.tools(setup)
            _ = try await manager.ok("part", "add", "--code", "OLD-1", "--name", "Old meter seal", "--unit", "piece")
            _ = try await manager.ok("part", "update", "OLD-1", "--retire")
            _ = try await manager.ok("part", "add", "--code", "LATE-1", "--name", "Seal, soon retired", "--unit", "piece")
            let made = try await manager.ok(
                "task", "create", "--title", "seal meter", "--team", "red", "--assignee", "ann@example.org", "--json")
            let id = String(try JSONOutput.decode(FieldTask.self, made).id)
            try await service("replicate")
            #expect(try await worker("login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            let catalogue = try await worker("parts", "--all")
            #expect(catalogue.stdout.contains("LATE-1") && catalogue.stdout.contains("OLD-1 (retired)"), "\(catalogue.stdout)")
            // A part the device does not hold is refused there, before anything is queued.
            let unknown = try await worker("used", id, "NOPE-9", "2")
            #expect(
                unknown.status == TeamworkError.Code.conflict.exitStatus
                    && unknown.stderr.contains("no part NOPE-9 in this device's copy of the catalogue"), "\(unknown.stderr)")
            #expect(try await worker("status").stdout.contains("Queued: 0"))
            // Retired parts are the master's to refuse (it knows every line of the task): one retired long ago,
            // and one retired after the device synced, are queued and set aside.
            #expect(try await worker("used", id, "old-1", "1").status == 0)
            _ = try await manager.ok("part", "update", "LATE-1", "--retire")
            #expect(try await worker("used", id, "LATE-1", "1").status == 0)
            // A worker already holding 100 lines on the task gets no 101st (the budget per worker and task).
            try await CentralStore.withStore(setup.url) { store in
                _ = try await store.rows(
                    """
                    INSERT INTO task_materials (task_id, person_id, description, quantity, recorded_at, change_id)
                    SELECT \(Int64(id)!), \(setup.world.ann.id), 'line ' || n, 1, now() - interval '1 hour', 'seeded'
                    FROM generate_series(1, 100) n
                    """)
            }
            #expect(try await worker("used", id, "--line", "one more", "1").status == 0)
            #expect(try await worker("used", id, "--line", "line 7", "2").status == 0, "a line it holds is still corrected")
            #expect(try await worker("sync").status == 0)
            try await service("listen")
            let conflicts = try await manager.ok("conflicts", "--task", id)
            #expect(
                conflicts.contains("part LATE-1 is retired") && conflicts.contains("part OLD-1 is retired")
                    && conflicts.contains("at most 100 lines"), "\(conflicts)")
            let lines = try await CentralStore.withStore(setup.url) { try await $0.materials(ofTask: Int64(id)!) }
            #expect(lines.count == 100 && lines.contains { $0.name == "line 7" && $0.quantity == "2" })
            try await CentralStore.withStore(setup.url) { store in
                _ = try await store.rows("DELETE FROM task_materials WHERE change_id = 'seeded'")
            }
            // The worker hears of it at the next sync, and the device lists nothing for those lines.
            try await service("replicate")
            #expect(try await worker("sync").status == 0)
            let mine = try await worker("used", id)
            #expect(
                mine.stdout.contains("line 7") && !mine.stdout.contains("LATE-1") && !mine.stdout.contains("OLD-1")
                    && !mine.stdout.contains("one more"), "\(mine.stdout)")
            // A part added since reaches the device with the common data, and the retirement too.
            _ = try await manager.ok(
                "part", "add", "--code", "NEW-2", "--name", "New seal", "--unit", "piece", "--price", "3", "--currency", "SEK")
            try await service("replicate")
            #expect(try await worker("sync").status == 0)
            let now = try await worker("parts")
            #expect(now.stdout.contains("NEW-2") && now.stdout.contains("3 SEK") && !now.stdout.contains("LATE-1"), "\(now.stdout)")
            let left = try await CentralStore.withStore(setup.url) { try await $0.materials(ofTask: Int64(id)!) }
            #expect(left.map { "\($0.name) \($0.quantity)" } == ["line 7 2"])
        }
    }
}
