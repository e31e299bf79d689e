import EventListener
import Foundation
import GRDB
import ReplicaGenerator
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

@Suite("Event listener: worker changes reach the master")
struct ListenerTests {
    @Test func aCompletionReachesTheMasterOnceWithTheWorkersNoteAndOneHistoryEntry() async throws {
        try await ListenerWorld.with { world, store in
            let made = Date(timeIntervalSinceNow: -60)
            try world.push(
                world.red, by: world.fixtures.ann,
                WorkerChange(id: "s-1", operation: .start, taskID: world.annTask, madeAt: made.addingTimeInterval(-600)),
                WorkerChange(id: "c-1", operation: .complete, taskID: world.annTask, note: "meter swapped", madeAt: made))
            let first = try await world.listener.once()
            #expect(first.recorded == 2 && first.applied == 2 && first.conflicts == 0 && first.complete)

            let task = try await store.task(id: world.annTask)
            #expect(task.status == .completed)
            #expect(task.completedBy == world.fixtures.ann.id)
            #expect(task.completionNote == "meter swapped")
            #expect(abs((task.completedAt ?? .distantPast).timeIntervalSince(made)) < 0.01, "the worker's time, not the listener's")
            #expect(abs((task.startedAt ?? .distantPast).timeIntervalSince(made.addingTimeInterval(-600))) < 0.01)
            let history = try await store.history(taskID: world.annTask)
            #expect(history.filter { $0.fieldChangeID == "c-1" }.count == 1)
            #expect(history.last?.actorID == world.fixtures.ann.id, "history names the worker")

            // Again: nothing new. The generator's write-back does not wake anything up to do twice.
            #expect(try await world.listener.once().recorded == 0)
            _ = try await world.generator.catchUp()
            let afterWriteBack = try await world.listener.once()
            #expect(afterWriteBack.recorded == 0)
            #expect(try await world.generator.verify().isEmpty)
            #expect(try await store.historyCountsByFieldChange() == ["s-1": 1, "c-1": 1])
        }
    }

    @Test func aCompletionForATaskTheManagerCancelledIsAConflictAndTheCancelStands() async throws {
        try await ListenerWorld.with { world, store in
            try world.push(world.red, by: world.fixtures.ann, .complete(world.annTask, note: "did it anyway", id: "c-1"))
            _ = try await store.cancelTask(id: world.annTask)
            let report = try await world.listener.once()
            #expect(report.recorded == 1 && report.applied == 0 && report.conflicts == 1)
            #expect(try await store.task(id: world.annTask).status == .cancelled)
            let conflicts = try await store.conflicts()
            #expect(conflicts.map(\.rule) == ["cancelled"])
            #expect(conflicts.first?.note == "did it anyway" && conflicts.first?.personID == world.fixtures.ann.id)
            let trace = try await store.history(taskID: world.annTask).filter { $0.fieldChangeID == "c-1" }
            #expect(trace.map(\.action) == ["field_change"])
            #expect(trace.first?.changes["conflict"]?.new == "cancelled")
        }
    }

    @Test func aChangeForADeletedTaskIsKeptAsAConflictWithItsTrace() async throws {
        try await ListenerWorld.with { world, store in
            try world.push(world.red, by: world.fixtures.ann, .start(world.annTask, id: "s-1"))
            try await store.deleteTask(id: world.annTask)
            let report = try await world.listener.once()
            #expect(report.conflicts == 1 && report.applied == 0)
            #expect(try await store.conflicts().map(\.rule) == ["deleted"])
            let history = try await store.history(taskID: world.annTask)
            #expect(history.last?.action == "field_change" && history.last?.fieldChangeID == "s-1")
        }
    }

    @Test func aCompletionForATaskMovedToAnotherTeamIsAppliedAndFlagged() async throws {
        try await ListenerWorld.with { world, store in
            try world.push(world.red, by: world.fixtures.ann, .start(world.annTask, id: "s-1"), .complete(world.annTask, id: "c-1"))
            _ = try await store.assignTask(id: world.annTask, to: try Assignment(teamID: world.fixtures.blue.id, assigneeID: nil))
            let report = try await world.listener.once()
            #expect(report.recorded == 2)
            let task = try await store.task(id: world.annTask)
            #expect(task.status == .completed && task.completedBy == world.fixtures.ann.id, "the work was done: it counts")
            let conflicts = try await store.conflicts()
            #expect(conflicts.map(\.rule) == ["moved", "moved"])
            #expect(conflicts.map(\.applied) == [false, true], "the start is not applied, the completion is")
            _ = try await world.generator.catchUp()
            #expect(try await world.generator.verify().isEmpty)
        }
    }

    /// Every signed-in worker reads the common replica: it must not let them follow anyone's position.
    @Test func aWorkersCheckinReachesTheMasterButNotTheCommonReplica() async throws {
        try await ListenerWorld.with { world, store in
            try world.push(
                world.red, by: world.fixtures.ann,
                WorkerChange(
                    id: "k-1", operation: .checkin, madeAt: Date(),
                    latitude: 51.5, longitude: -0.12))
            _ = try await world.listener.once()
            #expect(try await store.listLocations(kind: .person).count == 1, "managers see where Ann checked in")
            func personLocationsInCommon() throws -> Int {
                let queue = try DatabaseQueue(path: world.path(.common))
                defer { try? queue.close() }
                return try queue.read {
                    try Int.fetchOne($0, sql: "SELECT count(*) FROM locations WHERE kind = 'person' OR person_id IS NOT NULL") ?? 0
                }
            }
            _ = try await world.generator.catchUp()
            #expect(try personLocationsInCommon() == 0, "not after catching up")
            try await world.generator.rebuildAll()
            #expect(try personLocationsInCommon() == 0, "not after a full rebuild")
        }
    }

    /// Written into a replica file as an older endpoint would have: the master
    /// itself keeps changes from writing history on another team's task.
    @Test func aChangeNamingAnotherTeamsTaskWritesNoHistoryThere() async throws {
        try await ListenerWorld.with { world, store in
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let foreign = [
                RecordedWorkerChange(
                    position: 1, changeID: "checkin-on-blue", personID: world.fixtures.ann.id, taskID: world.cyTask,
                    operation: "checkin", note: nil, madeAt: now, receivedAt: now, latitude: 1, longitude: 2),
                RecordedWorkerChange(
                    position: 2, changeID: "refused-on-blue", personID: world.fixtures.ann.id, taskID: world.cyTask,
                    operation: "complete", note: "spoofed", madeAt: now, receivedAt: now, rejection: "not in this replica"),
                RecordedWorkerChange(
                    position: 3, changeID: "complete-blue", personID: world.fixtures.ann.id, taskID: world.cyTask,
                    operation: "complete", note: "forged", madeAt: now, receivedAt: now),
            ]
            _ = try await store.applyFieldChanges(
                replica: world.red.name, source: "forged", foreign,
                cursor: ListenerCursor(position: 3, changeID: "complete-blue"))
            let history = try await store.history(taskID: world.cyTask)
            #expect(!history.contains { $0.fieldChangeID != nil }, "no history from red's file on blue's task: \(history.map(\.action))")
            let task = try await store.task(id: world.cyTask)
            #expect(task.status != .completed, "and the task is untouched")
            #expect(try await store.conflicts().allSatisfy { $0.taskID == nil }, "the ledger keeps the changes, without the task")
        }
    }

    @Test func twoWorkersCompletingOneFreeTaskTheFirstWinsAndTheSecondIsShownToManagers() async throws {
        try await ListenerWorld.with { world, store in
            // In the field: Ann claims and completes first; Bo, offline, did the same and syncs later.
            try world.push(
                world.red, by: world.fixtures.ann, .claim(world.freeTask, id: "a-claim"),
                .complete(world.freeTask, note: "Ann's", id: "a-done"))
            let bo = try world.push(
                world.red, by: world.fixtures.bo, .claim(world.freeTask, id: "b-claim"),
                .complete(world.freeTask, note: "Bo's", id: "b-done"))
            #expect(bo.map(\.status) == [.rejected, .rejected])
            let report = try await world.listener.once()
            #expect(report.recorded == 4 && report.applied == 2 && report.conflicts == 2)
            let task = try await store.task(id: world.freeTask)
            #expect(task.assigneeID == world.fixtures.ann.id && task.completedBy == world.fixtures.ann.id && task.completionNote == "Ann's")
            let conflicts = try await store.conflicts()
            #expect(conflicts.map(\.rule) == ["rejected", "rejected"])
            #expect(conflicts.map(\.note) == [nil, "Bo's"], "Bo's note is kept for the manager")
            #expect(conflicts.allSatisfy { $0.personID == world.fixtures.bo.id && $0.detail?.contains("assigned to someone else") == true })
        }
    }

    @Test func whenTwoCompletionsOfOneTaskReachTheMasterTheFirstWins() async throws {
        try await ListenerWorld.with { world, store in
            // A stale file can hold two completions (e.g. one carried over from before a rebuild).
            try world.push(world.red, by: world.fixtures.ann, .complete(world.annTask, note: "first", id: "c-1"))
            let queue = try DatabaseQueue(path: world.path(world.red))
            try await queue.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO worker_changes (change_id, person_id, task_id, operation, payload, made_at, received_at)
                        VALUES ('c-2', ?, ?, 'complete', '{"note":"second"}', 1, 1)
                        """, arguments: [world.fixtures.bo.id, world.annTask])
            }
            try queue.close()
            let report = try await world.listener.once()
            #expect(report.applied == 1 && report.conflicts == 1)
            #expect(try await store.task(id: world.annTask).completionNote == "first")
            #expect(try await store.conflicts().map(\.rule) == ["already_completed"])
        }
    }

    @Test func aCompletionAfterTheManagerReassignedTheTaskIsAppliedAndFlagged() async throws {
        try await ListenerWorld.with { world, store in
            try world.push(world.red, by: world.fixtures.ann, .complete(world.annTask, id: "c-1"))
            _ = try await store.assignTask(
                id: world.annTask, to: try Assignment(teamID: world.fixtures.red.id, assigneeID: world.fixtures.bo.id))
            _ = try await world.listener.once()
            let task = try await store.task(id: world.annTask)
            #expect(task.status == .completed && task.completedBy == world.fixtures.ann.id && task.assigneeID == world.fixtures.bo.id)
            #expect(try await store.conflicts().map(\.rule) == ["reassigned"])
        }
    }

    @Test func aClaimReachesTheMasterUnlessAManagerAssignedTheTaskMeanwhile() async throws {
        try await ListenerWorld.with { world, store in
            try world.push(world.red, by: world.fixtures.bo, .claim(world.freeTask, id: "claim-1"))
            _ = try await world.listener.once()
            #expect(try await store.task(id: world.freeTask).assigneeID == world.fixtures.bo.id)

            let other = try await store.createTask(try world.fixtures.task("second free one", team: world.fixtures.red))
            _ = try await world.generator.catchUp()
            try world.push(world.red, by: world.fixtures.bo, .claim(other.id, id: "claim-2"))
            _ = try await store.assignTask(
                id: other.id, to: try Assignment(teamID: world.fixtures.red.id, assigneeID: world.fixtures.ann.id))
            _ = try await world.listener.once()
            #expect(try await store.task(id: other.id).assigneeID == world.fixtures.ann.id)
            #expect(try await store.conflicts().map(\.rule) == ["claimed_by_other"])
        }
    }

    @Test func aCheckInUpdatesTheWorkersLastKnownPosition() async throws {
        try await ListenerWorld.with { world, store in
            try world.push(
                world.red, by: world.fixtures.ann,
                WorkerChange(id: "here", operation: .checkin, madeAt: Date(), latitude: 48.85, longitude: 2.35))
            let report = try await world.listener.once()
            #expect(report.applied == 1)
            let rows = try await store.rows("SELECT latitude, longitude FROM locations WHERE person_id = \(world.fixtures.ann.id)")
            let (latitude, longitude) = try rows[0].decode((Double, Double).self)
            #expect(latitude == 48.85 && longitude == 2.35)
        }
    }

    @Test func managersResolveConflictsAndResolvedOnesLeaveTheOpenList() async throws {
        try await ListenerWorld.with { world, store in
            try world.push(world.red, by: world.fixtures.ann, .complete(world.annTask, id: "c-1"))
            _ = try await store.cancelTask(id: world.annTask)
            _ = try await world.listener.once()
            let conflict = try #require(try await store.conflicts().first)
            var manager = store
            manager.actorID = world.fixtures.manager.id
            let resolved = try await manager.resolveConflict(id: conflict.id, resolution: "customer cancelled; paid call-out")
            #expect(resolved.resolvedBy == world.fixtures.manager.id && resolved.resolution == "customer cancelled; paid call-out")
            #expect(try await store.conflicts().isEmpty)
            #expect(try await store.conflicts(includeResolved: true).count == 1)
            await #expect(throws: TeamworkError.self) { try await manager.resolveConflict(id: conflict.id, resolution: "") }
            await #expect(throws: TeamworkError.self) { try await manager.resolveConflict(id: 999_999, resolution: "") }
        }
    }
}
