import CentralStore
import EventListener
import Foundation
import ReplicaGenerator
import TeamworkModel
import TeamworkTestSupport
import Testing

/// A plan's occurrences are field work like any other: they reach the device,
/// are completed offline and come back to the master exactly once; one the
/// plan cancelled meanwhile keeps its cancellation and the late completion is
/// a conflict for managers.
@Suite("Recurring work in the field")
struct PlanFieldWorkTests {
    @Test func aRecurringTaskCompletedOfflineArrivesOnceAndOneCancelledMeanwhileIsAConflict() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let manager = ManagerTool(setup.url)
            let today = Zone.utc.date(of: Date())
            let added = try await manager(
                "plan", "add", "--title", "Pump service", "--team", "red", "--assignee", "ann@example.org",
                "--rrule", "FREQ=DAILY", "--start", today.description, "--window-start", "23:00",
                "--duration", "PT30M", "--horizon", "1", "--json")
            #expect(added.status == 0, "\(added.stderr)")
            let plan = try JSONOutput.decode(Plan.self, added.stdout)
            let made = try await CentralStore.withStore(setup.url) { try await $0.occurrences(ofPlan: plan.id) }
            #expect(made.map(\.day) == [today, today.adding(days: 1)], "today and tomorrow")
            let (first, second) = (made[0].task.id, made[1].task.id)
            _ = try await ReplicaGenerator(.init(databaseURL: setup.url, directory: setup.folder)).catchUp()

            // Ann's phone has both, with their plan; she completes both offline.
            #expect(try await WorkerTool.run(setup.annHome, "login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            let shown = try await WorkerTool.run(setup.annHome, "show", String(first)).stdout
            #expect(shown.contains("plan \(plan.id), the occurrence of \(today)"), "\(shown)")
            for id in [first, second] {
                #expect(try await WorkerTool.run(setup.annHome, "complete", String(id), "--note", "pump greased").status == 0)
            }
            // Meanwhile the dispatcher moves the plan's tomorrow: that occurrence is cancelled.
            #expect(try await manager("plan", "skip", String(plan.id), today.adding(days: 1).description).status == 0)
            _ = try await ReplicaGenerator(.init(databaseURL: setup.url, directory: setup.folder)).catchUp()

            // She syncs twice (a retry after a lost answer sends the same changes again).
            #expect(try await WorkerTool.run(setup.annHome, "sync").status == 0)
            #expect(try await WorkerTool.run(setup.annHome, "sync").status == 0)
            _ = try await EventListener(.init(databaseURL: setup.url, directory: setup.folder)).once()
            _ = try await EventListener(.init(databaseURL: setup.url, directory: setup.folder)).once()

            try await CentralStore.withStore(setup.url) { store in
                let done = try await store.task(id: first)
                #expect(done.status == .completed && done.completedBy == setup.world.ann.id && done.completionNote == "pump greased")
                let history = try await store.history(taskID: first)
                #expect(history.filter { $0.changes["status"]?.new?.contains("completed") == true }.count == 1, "completed exactly once")
                let skipped = try await store.task(id: second)
                #expect(skipped.status == .cancelled, "the plan's cancellation stands")
                let conflicts = try await store.conflicts(includeResolved: true, taskID: second)
                #expect(conflicts.contains { $0.rule == "cancelled" || $0.rule == "rejected" }, "a conflict for managers: \(conflicts)")
            }
        }
    }
}
