import CentralStore
import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

/// What a worker can take back, and whose queued work leaves a device:
/// `reopen` of one's own completion, `undo` of a change not sent yet, and a
/// device signed in by someone else while work waits on it.
@Suite("A worker's queue: reopen, undo and a shared device")
struct WorkerQueueTests {

    @Test func aWorkerReopensTheirOwnCompletionAndTheMasterFollowsWithHistory() async throws {
        try await RefusedChangeTests().withClimbingTask { scene in
            let task = String(scene.task)
            #expect(try await WorkerTool.run(scene.ann, "claim", task).status == 0)
            #expect(try await WorkerTool.run(scene.ann, "start", task).status == 0)
            #expect(try await WorkerTool.run(scene.ann, "complete", task, "--note", "mast checked").status == 0)
            #expect(try await WorkerTool.run(scene.ann, "sync").status == 0)
            try await scene.settle()
            #expect(try await scene.onMaster().status == .completed)

            // Bo cannot take back Ann's completion; Ann can, saying why.
            #expect(try await WorkerTool.run(scene.bo, "sync").status == 0)
            let bo = try await WorkerTool.run(scene.bo, "reopen", task, "--note", "not mine")
            #expect(bo.status == 68 && bo.stderr.contains("only the worker who completed"), "\(bo.stderr)")
            #expect(try await WorkerTool.run(scene.ann, "reopen", task, "--note", "a bolt is missing").status == 0)
            await #expect(try scene.onDevice(scene.ann).status == "in_progress")
            #expect(
                try await WorkerTool.run(scene.ann, "tasks").stdout.contains("in_progress  Mast inspection"), "statuses read as on the wire"
            )
            #expect(try await WorkerTool.run(scene.ann, "sync").status == 0)
            try await scene.settle()
            let master = try await scene.onMaster()
            #expect(master.status == .inProgress && master.completedAt == nil && master.completionNote == nil)
            let history = try await CentralStore.withStore(scene.url) { try await $0.history(taskID: scene.task) }
            #expect(history.last?.changes["status"]?.new == "in_progress", "\(history.last.map { "\($0)" } ?? "")")
            #expect(try await scene.service("verify", once: false).status == 0)
        }
    }

    @Test func undoTakesBackTheNewestQueuedChangeAndNothingOfItLeavesTheDevice() async throws {
        try await RefusedChangeTests().withClimbingTask { scene in
            let task = String(scene.task)
            let nothing = try await WorkerTool.run(scene.ann, "undo")
            #expect(nothing.status == 67 && nothing.stderr.contains("nothing is queued"), "\(nothing.stderr)")
            #expect(try await WorkerTool.run(scene.ann, "claim", task).status == 0)
            #expect(try await WorkerTool.run(scene.ann, "start", task).status == 0)
            // The wrong task: both taken back, newest first; the device shows the task as the server has it.
            #expect(try await WorkerTool.run(scene.ann, "undo").stdout.contains("Took back start of task \(task)"))
            await #expect(try scene.onDevice(scene.ann).status == "assigned")
            #expect(try await WorkerTool.run(scene.ann, "undo").stdout.contains("Took back claim of task \(task)"))
            let shown = try await scene.onDevice(scene.ann)
            #expect(shown.status == "open" && shown.assigneeId == nil)
            #expect(try await WorkerTool.run(scene.ann, "status").stdout.contains("Queued: 0 "))
            #expect(try await WorkerTool.run(scene.ann, "sync").status == 0)
            try await scene.settle()
            #expect(try await scene.ledgerEntries() == 0)
            #expect(try await scene.onMaster().assigneeID == nil)
        }
    }

    @Test func undoOfAChangeALaterQueuedChangeDependsOnIsRefused() async throws {
        try await RefusedChangeTests().withClimbingTask { scene in
            let task = String(scene.task)
            #expect(try await WorkerTool.run(scene.ann, "claim", task).status == 0)
            #expect(try await WorkerTool.run(scene.ann, "start", task).status == 0)
            struct Status: Decodable {
                struct Change: Decodable {
                    var changeId: String
                    var operation: String
                }
                var queued: [Change]
            }
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            let queued = try await decoder.decode(Status.self, from: Data(WorkerTool.run(scene.ann, "status", "--json").stdout.utf8)).queued
            let claim = try #require(queued.first { $0.operation == "claim" })
            let refused = try await WorkerTool.run(scene.ann, "undo", claim.changeId)
            #expect(refused.status == 68 && refused.stderr.contains("take that back first"), "\(refused.stderr)")
            await #expect(try scene.onDevice(scene.ann).status == "in_progress")
        }
    }

    @Test func signingInAsSomeoneElseWhileWorkIsQueuedIsRefusedAndNothingLeavesUnderTheirToken() async throws {
        try await RefusedChangeTests().withClimbingTask { scene in
            let task = String(scene.task)
            #expect(try await WorkerTool.run(scene.ann, "claim", task).status == 0)
            #expect(try await WorkerTool.run(scene.ann, "checkin", "--lat", "59.3", "--lon", "18.0").status == 0)
            let boToken = try await scene.ok("person", "token", "issue", "bo@example.org").trimmingCharacters(in: .whitespacesAndNewlines)
            // Bo picks up Ann's phone.
            let refused = try await WorkerTool.run(scene.ann, "login", "--server", scene.server.url, "--token", boToken)
            #expect(refused.status == 68 && refused.stderr.contains("2 changes made by someone else"), "\(refused.stderr)")
            #expect(try await WorkerTool.run(scene.ann, "status").stdout.contains("Queued: 2 "))
            let discarded = try await WorkerTool.run(
                scene.ann, "login", "--server", scene.server.url, "--token", boToken, "--discard-queue")
            #expect(discarded.status == 0 && discarded.stdout.contains("Dropped 2 queued changes"), "\(discarded.stderr)")
            await #expect(try scene.onDevice(scene.ann).assigneeId == nil)
            try await scene.settle()
            // Nothing of Ann's went out under Bo's token: no claim, no check-in.
            #expect(try await scene.ledgerEntries() == 0)
            #expect(try await scene.onMaster().assigneeID == nil)
            let seen = try await CentralStore.withStore(scene.url) { try await $0.person(reference: "bo@example.org").lastSeenAt }
            #expect(seen == nil, "Bo placed at Ann's position")
        }
    }
}
