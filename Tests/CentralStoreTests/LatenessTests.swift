import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// Work with only an appointment window is late once its window has ended, and due once it is
/// about to begin: the report and `task list --overdue` say so as the board does.
@Suite("Lateness of window-only work")
struct LatenessTests {
    @Test func aWindowThatEndedIsOverdueAndOneAboutToBeginIsDueSoon() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let now = Date()
            var missed = try world.task("missed visit", team: world.red, assignee: world.ann)
            missed.window = try TimeWindow(start: now.addingTimeInterval(-3 * 3600), end: now.addingTimeInterval(-3600))
            let late = try await store.createTask(missed)
            var coming = try world.task("coming visit", team: world.red, assignee: world.ann)
            coming.window = try TimeWindow(start: now.addingTimeInterval(2 * 3600), end: now.addingTimeInterval(4 * 3600))
            let soon = try await store.createTask(coming)
            #expect(late.isLate(at: now), "the model's own rule")

            let report = try await store.report(now: now)
            #expect(report.overdueTasks.map(\.id) == [late.id], "the report lists the missed window as overdue")
            #expect(report.dueSoon.map(\.id) == [soon.id], "and the coming one as due soon")
            #expect(report.teams.first { $0.teamSlug == "red" }?.overdue == 1)
            #expect(report.workload.first { $0.personID == world.ann.id }?.overdue == 1)
            #expect(try await store.listTasks(TaskFilter(overdueAt: now)).map(\.id) == [late.id], "task list --overdue")
        }
    }
}
