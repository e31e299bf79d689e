import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// A checklist from the manager's tool to the worker's device and back: answered
/// offline, checked on the device with the rules the master uses, blocking the
/// completion until the required items are answered, and arriving once.
@Suite("Checklists end to end")
struct ChecklistEndToEndTests {
    struct Listing: Decodable {
        struct Answer: Decodable {
            var item: String
            var value: String
            var by: Int64
        }
        var answers: [Answer]
        var missing: [String]
        var failed: [String]
    }

    @Test func aWorkerAnswersOfflineCannotCompleteWithARequiredItemOpenAndTheManagerSeesEveryAnswerOnce() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let manager = ManagerTool(setup.url)
            func service(_ command: String) async throws {
                let run = try await Tool.service.run([
                    command, "--once", "--database-url", setup.url.connectionString,
                    "--replicas", setup.folder.path,
                ])
                #expect(run.status == 0, "\(command) --once: \(run.stderr)")
            }
            func worker(_ arguments: String...) async throws -> Tool.Run { try await WorkerTool.run(setup.annHome, arguments) }

            _ = try await manager.ok(
                "checklist", "add", "Meter swap", "--item", "isolated:check:Isolator locked out:required",
                "--item", "reading:number(kWh,0..):Final reading:required",
                "--item", "earth:number(Ω,0..1):Earth resistance",
                "--item", "seal:choice(intact|broken|replaced):Meter seal",
                "--item", "remarks:text:Remarks")
            let created = try await manager.ok(
                "task", "create", "--title", "swap meter", "--team", "red", "--assignee", "ann@example.org",
                "--checklist", "Meter swap", "--json")
            let task = try JSONOutput.decode(FieldTask.self, created)
            #expect(task.checklist?.version == 1 && task.checklist?.items.count == 5)
            // A new version afterwards does not change the form the task (and so the worker) has.
            _ = try await manager.ok("checklist", "update", "Meter swap", "--item", "isolated:check:Isolator locked out:required")
            try await service("replicate")

            #expect(try await worker("login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            let id = String(task.id)
            let form = try await worker("checklist", id)
            #expect(
                form.stdout.contains("Meter swap (version 1)") && form.stdout.contains("number (kWh, 0..)")
                    && form.stdout.contains("Still to answer before completing: isolated, reading."), "\(form.stdout)")

            // Offline from here on.
            try await setup.server.stop()
            #expect(try await worker("start", id).status == 0)
            let early = try await worker("complete", id, "--note", "swapped")
            #expect(
                early.status == TeamworkError.Code.conflict.exitStatus
                    && early.stderr.contains("needs answers to isolated, reading before it is completed"), "\(early.stderr)")
            for (arguments, message) in [
                (["check", id, "earth", "1.5"], "earth: the most taken is 1 Ω"),
                // A negative number is a value, not an option (seen before: "-5" was read as an option).
                (["check", id, "earth", "-5"], "earth: the least taken is 0 Ω"),
                (["check", id, "reading", "48,213"], "answer a number like"),
                (["check", id, "seal", "gone"], "answer one of: intact, broken, replaced"),
                (["check", id, "voltage", "230"], "has no checklist item 'voltage'"),
                (["check", id, "remarks", "\u{1B}[2J"], "control characters"),
            ] {
                let refused = try await WorkerTool.run(setup.annHome, arguments)
                // A value the item cannot take is bad input (65, as the README says), not a conflict (68).
                let expected = arguments[2] == "voltage" ? TeamworkError.Code.conflict : .invalidInput
                #expect(
                    refused.status == expected.exitStatus && refused.stderr.contains(message),
                    "\(arguments): \(refused.status) \(refused.stderr)")
            }
            #expect(try await worker("check", id, "isolated").status == 0, "a check is yes when no value is given")
            #expect(try await worker("check", id, "reading", "48000").status == 0)
            #expect(try await worker("check", id, "reading", "48213").status == 0, "the latest answer counts")
            #expect(try await worker("check", id, "earth", "0.4").status == 0)
            #expect(try await worker("check", id, "seal", "broken").status == 0)
            let done = try await worker("complete", id)  // a note is optional
            #expect(done.status == 0, "\(done.stderr)")
            let status = try await worker("status")
            #expect(status.stdout.contains("Queued: 7 "), "start, five answers, complete: \(status.stdout)")

            // Back online: one sync, then the listener; twice over, to show nothing doubles.
            try await setup.server.start()
            #expect(try await worker("sync").status == 0)
            #expect(try await worker("sync").status == 0)
            try await service("listen")
            try await service("listen")

            let listing = try JSONOutput.decode(Listing.self, try await manager.ok("task", "checklist", id, "--json"))
            #expect(
                Dictionary(uniqueKeysWithValues: listing.answers.map { ($0.item, $0.value) })
                    == ["isolated": "yes", "reading": "48213", "earth": "0.4", "seal": "broken"])
            #expect(listing.answers.allSatisfy { $0.by == setup.world.ann.id })
            #expect(listing.missing.isEmpty && listing.failed.isEmpty)
            let shown = try await manager.ok("task", "show", id)
            #expect(
                shown.contains("Meter swap v1: 4 of 5 answered") && shown.contains("48213 kWh")
                    && shown.contains("ann Test"), "\(shown)")
            let master = try await CentralStore.withStore(setup.url) { store in
                (
                    try await store.task(id: task.id).status,
                    try await store.rows("SELECT count(*)::int FROM field_changes WHERE operation = 'answer' AND applied").first!.decode(
                        Int.self)
                )
            }
            #expect(master.0 == .completed)
            #expect(master.1 == 5, "each answer is in the ledger once, the overwritten one too")

            let csv = try await manager.ok("checklist", "export", "Meter swap")
            let lines = csv.split(separator: "\r\n").map(String.init)
            #expect(
                lines.first == "task,title,version,completed_at,completed_by,missing,failed,isolated,reading,earth,seal,remarks", "\(csv)")
            #expect(
                lines.count == 2 && lines[1].hasPrefix("\(id),swap meter,1,") && lines[1].hasSuffix(",ann Test,,,yes,48213,0.4,broken,"),
                "\(csv)")
            let report = try await manager.ok("report")
            #expect(report.contains("Meter swap"), "\(report)")
        }
    }
}
