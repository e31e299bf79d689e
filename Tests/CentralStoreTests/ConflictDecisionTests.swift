import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// Deciding field work the master set aside: only an open completion of a task still to be done
/// is accepted, as the worker's work, once; every refusal changes nothing.
@Suite("Conflicts: accepting and dismissing")
struct ConflictDecisionTests {
    /// Sets Ann's `operation` on `task` aside, as the listener does with a change it cannot take.
    static func setAside(_ store: CentralStore, _ world: Fixtures, task: Int64, operation: String, id: String) async throws -> Int64 {
        let millis = Int64(Date().timeIntervalSince1970 * 1000)
        try await store.setAsideFieldChange(
            replica: "team-\(world.red.id)", source: "team-\(world.red.id)",
            RecordedWorkerChange(
                position: Int64(id.hashValue & 0xFFFF), changeID: id, personID: world.ann.id, taskID: task, operation: operation,
                note: "done by Ann", madeAt: millis - 60_000, receivedAt: millis),
            reason: "test")
        return try #require(try await store.conflicts(taskID: task).first { $0.changeID == id }).id
    }

    @Test func anOpenCompletionIsAcceptedOnceAsTheWorkersWorkAndEveryOtherDecisionIsRefused() async throws {
        try await TestDatabase.withFresh { url in
            let world = try await CentralStore.withStore(url) { try await Fixtures.seed($0) }
            try await CentralStore.withStore(url, actorID: world.manager.id) { store in
                let task = try await store.createTask(try world.task("pump", team: world.red, assignee: world.bo)).id
                let started = try await Self.setAside(store, world, task: task, operation: "start", id: "s-1")
                let completed = try await Self.setAside(store, world, task: task, operation: "complete", id: "c-1")

                // A start is not work done: it cannot be accepted, only dismissed.
                await #expect(throws: TeamworkError.self) { try await store.acceptConflict(id: started) }
                #expect(try await store.task(id: task).status == .assigned)

                let (conflict, done) = try await store.acceptConflict(id: completed)
                #expect(done.status == .completed && done.completedBy == world.ann.id && done.assigneeID == world.ann.id)
                #expect(done.completionNote == "done by Ann")
                #expect(conflict.resolvedBy == world.manager.id && conflict.resolution == "accepted as done by ann Test")
                #expect(try await store.history(taskID: task).last?.actorID == world.manager.id)
                // Her start was settled with it; nothing is left open.
                #expect(try await store.conflicts(taskID: task).isEmpty)

                // Once only.
                await #expect(throws: TeamworkError.self) { try await store.acceptConflict(id: completed) }
                await #expect(throws: TeamworkError.self) { try await store.acceptConflict(id: 999_999) }
            }
        }
    }

    @Test func aCompletionOfACancelledOrAlreadyCompletedTaskIsRefusedAndChangesNothing() async throws {
        try await TestDatabase.withFresh { url in
            let world = try await CentralStore.withStore(url) { try await Fixtures.seed($0) }
            try await CentralStore.withStore(url, actorID: world.manager.id) { store in
                let cancelled = try await store.createTask(try world.task("gone", team: world.red, assignee: world.bo)).id
                let conflict = try await Self.setAside(store, world, task: cancelled, operation: "complete", id: "c-2")
                _ = try await store.cancelTask(id: cancelled)
                let before = try await store.task(id: cancelled)
                await #expect(throws: TeamworkError.self) { try await store.acceptConflict(id: conflict) }
                #expect(try await store.task(id: cancelled) == before)
                #expect(try await store.conflicts(taskID: cancelled).count == 1, "still waits for a decision")

                // Dismissed with a reason instead: decided, the task untouched.
                let dismissed = try await store.resolveConflict(id: conflict, resolution: "dismissed: the customer cancelled")
                #expect(dismissed.resolvedBy == world.manager.id)
                #expect(try await store.task(id: cancelled) == before)
            }
        }
    }
}
