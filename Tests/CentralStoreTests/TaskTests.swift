import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

@Suite("Master task list")
struct TaskTests {
    @Test func statusFollowsTheAssignee() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            #expect(try await store.createTask(try world.task(team: world.red)).status == .open)
            #expect(try await store.createTask(try world.task(team: world.red, assignee: world.ann)).status == .assigned)
            #expect(try await store.createTask(try world.task(assignee: world.cy)).status == .assigned)
        }
    }

    @Test func assigningToATeamAndANonMemberIsRefusedAndWritesNothing() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let feedBefore = try await store.feed().count
            await #expect(throws: TeamworkError.invalid("the assignee is not a member of that team")) {
                try await store.createTask(try world.task(team: world.red, assignee: world.cy))
            }
            #expect(try await store.listTasks().isEmpty)
            #expect(try await store.feed().count == feedBefore)

            let task = try await store.createTask(try world.task(team: world.red))
            await #expect(throws: TeamworkError.invalid("the assignee is not a member of that team")) {
                try await store.assignTask(id: task.id, to: try Assignment(teamID: world.red.id, assigneeID: world.cy.id))
            }
            #expect(try await store.task(id: task.id) == task)
        }
    }

    @Test func unknownTeamsPeopleAndLocationsAreNotFound() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            await #expect(throws: TeamworkError.notFound("no such team")) {
                try await store.createTask(try NewTask(title: "x", assignment: try Assignment(teamID: 999, assigneeID: nil)))
            }
            await #expect(throws: TeamworkError.notFound("no such location")) {
                try await store.createTask(
                    try NewTask(title: "x", assignment: try Assignment(teamID: world.red.id, assigneeID: nil), locationID: 999))
            }
            await #expect(throws: TeamworkError.notFound("no task with id 42")) { try await store.cancelTask(id: 42) }
        }
    }

    @Test func listingFiltersAndSortsByDueDateThenPriority() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let day: (Int) -> Date = { try! ISODate.parse("2026-12-\(String(format: "%02d", $0))") }
            let late = try await store.createTask(try world.task("late low", team: world.red, priority: .low, due: day(10)))
            let soonLow = try await store.createTask(try world.task("soon low", team: world.red, priority: .low, due: day(2)))
            let soonUrgent = try await store.createTask(
                try world.task("soon urgent", team: world.red, assignee: world.ann, priority: .urgent, due: day(2)))
            let undated = try await store.createTask(try world.task("undated", team: world.blue, priority: .high))
            let done = try await store.createTask(try world.task("blue overdue", team: world.blue, due: day(1)))

            #expect(try await store.listTasks().map(\.id) == [done.id, soonUrgent.id, soonLow.id, late.id, undated.id])
            #expect(try await store.listTasks(TaskFilter(teamID: world.red.id)).map(\.id) == [soonUrgent.id, soonLow.id, late.id])
            #expect(try await store.listTasks(TaskFilter(assigneeID: world.ann.id)).map(\.id) == [soonUrgent.id])
            #expect(try await store.listTasks(TaskFilter(statuses: [.open], priorities: [.low])).map(\.id) == [soonLow.id, late.id])
            #expect(try await store.listTasks(TaskFilter(dueBefore: day(5), dueAfter: day(1))).map(\.id) == [soonUrgent.id, soonLow.id])
            let overdue = TaskFilter(overdueAt: day(3))
            #expect(try await store.listTasks(overdue).map(\.id) == [done.id, soonUrgent.id, soonLow.id])
            _ = try await store.cancelTask(id: done.id)
            #expect(try await store.listTasks(overdue).map(\.id) == [soonUrgent.id, soonLow.id])
            #expect(try await store.listTasks(TaskFilter(limit: 2)).count == 2)
        }
    }

    @Test func aSecondManagerEditingAStaleVersionGetsAConflictAndNothingIsLost() async throws {
        try await TestDatabase.withFresh { url in
            let task = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                return try await store.createTask(try world.task(team: world.red))
            }
            // Two managers, two connections, both read version 1.
            try await CentralStore.withStore(url) { first in
                try await CentralStore.withStore(url) { second in
                    let seenByFirst = try await first.task(id: task.id)
                    let seenBySecond = try await second.task(id: task.id)
                    _ = try await first.updateTask(
                        id: task.id, try TaskChanges(title: "First's title"), expectedVersion: seenByFirst.version)
                    await #expect(throws: TeamworkError.self) {
                        try await second.updateTask(id: task.id, try TaskChanges(priority: .urgent), expectedVersion: seenBySecond.version)
                    }
                }
            }
            try await CentralStore.withStore(url) { store in
                let after = try await store.task(id: task.id)
                #expect(after.title == "First's title")
                #expect(after.priority == .normal)
                #expect(after.version == task.version + 1)
            }
        }
    }

    @Test func theConflictMessageNamesBothVersions() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let task = try await store.createTask(try world.task(team: world.red))
            _ = try await store.updateTask(id: task.id, try TaskChanges(title: "v2"))
            do {
                _ = try await store.cancelTask(id: task.id, expectedVersion: 1)
                Issue.record("a stale version was accepted")
            } catch let error as TeamworkError {
                #expect(error.code == .conflict)
                #expect(error.message.contains("version 1") && error.message.contains("version 2"))
            }
            #expect(try await store.task(id: task.id).status == .open)
        }
    }

    @Test func concurrentEditsOfDifferentFieldsWithoutAVersionBothSurvive() async throws {
        try await TestDatabase.withFresh { url in
            let task = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                return try await store.createTask(try world.task(team: world.red))
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        try await CentralStore.withStore(url) { store in
                            let changes =
                                index.isMultiple(of: 2)
                                ? try TaskChanges(title: "title \(index)") : try TaskChanges(description: "description \(index)")
                            _ = try await store.updateTask(id: task.id, changes)
                        }
                    }
                }
                try await group.waitForAll()
            }
            try await CentralStore.withStore(url) { store in
                let after = try await store.task(id: task.id)
                #expect(after.title.hasPrefix("title "))
                #expect(after.description.hasPrefix("description "))
                #expect(after.version == 11)
            }
        }
    }

    @Test func cancelReopenAndAssignFollowTheTaskLifecycle() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let task = try await store.createTask(try world.task(team: world.red, assignee: world.ann))
            #expect(try await store.cancelTask(id: task.id).status == .cancelled)
            await #expect(throws: TeamworkError.conflict("task \(task.id) is already cancelled")) {
                try await store.cancelTask(id: task.id)
            }
            await #expect(throws: TeamworkError.self) {
                try await store.assignTask(id: task.id, to: try Assignment(teamID: world.red.id, assigneeID: world.bo.id))
            }
            #expect(try await store.reopenTask(id: task.id).status == .assigned)
            let moved = try await store.assignTask(id: task.id, to: try Assignment(teamID: world.blue.id, assigneeID: nil))
            #expect(moved.status == .open && moved.teamID == world.blue.id && moved.assigneeID == nil)
            let personal = try await store.assignTask(id: task.id, to: try Assignment(teamID: nil, assigneeID: world.cy.id))
            #expect(personal.status == .assigned && personal.teamID == nil)
        }
    }

    @Test func historyRecordsWhoChangedWhatWithOldAndNewValues() async throws {
        try await TestDatabase.withFresh { url in
            let (world, task) = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                return (world, try await store.createTask(try world.task("Original", team: world.red)))
            }
            try await CentralStore.withStore(url, actorID: world.manager.id) { store in
                _ = try await store.updateTask(id: task.id, try TaskChanges(title: "Renamed", priority: .high))
                _ = try await store.assignTask(id: task.id, to: try Assignment(teamID: world.red.id, assigneeID: world.bo.id))
                try await store.deleteTask(id: task.id)
                let history = try await store.history(taskID: task.id)
                #expect(history.map(\.action) == ["created", "updated", "updated", "deleted"])
                #expect(history[0].actorID == nil)
                #expect(history[1].actorID == world.manager.id)
                #expect(history[1].changes["title"] == FieldChange(old: "Original", new: "Renamed"))
                #expect(history[1].changes["priority"] == FieldChange(old: "normal", new: "high"))
                #expect(Set(history[1].changes.keys) == ["title", "priority"])
                #expect(history[2].changes["assignee_id"] == FieldChange(old: nil, new: String(world.bo.id)))
                #expect(history[2].changes["status"] == FieldChange(old: "open", new: "assigned"))
                #expect(history[3].changes["title"]?.old == "Renamed")
            }
        }
    }

    @Test func deletingATaskKeepsItsHistory() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let task = try await store.createTask(try world.task(team: world.red))
            try await store.deleteTask(id: task.id)
            await #expect(throws: TeamworkError.self) { try await store.task(id: task.id) }
            #expect(try await store.history(taskID: task.id).count == 2)
            await #expect(throws: TeamworkError.self) { try await store.deleteTask(id: task.id) }
        }
    }

    @Test func theReportCountsByStatusAndTeamWithOverdueAndCompletionRate() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let past = Date(timeIntervalSinceNow: -86_400)
            let overdue = try await store.createTask(try world.task("overdue", team: world.red, due: past))
            _ = try await store.createTask(try world.task("open", team: world.red))
            let cancelled = try await store.createTask(try world.task("cancelled", team: world.blue, due: past))
            _ = try await store.cancelTask(id: cancelled.id)
            let done = try await store.createTask(try world.task("personal", assignee: world.cy))
            try await store.connection.query(
                "UPDATE tasks SET status = 'completed', completed_at = now(), completed_by = \(world.cy.id) WHERE id = \(done.id)",
                logger: store.logger
            )
            let report = try await store.report()
            #expect(report.total == 4)
            #expect(report.countsByStatus == ["open": 2, "cancelled": 1, "completed": 1])
            #expect(report.teams.map(\.teamSlug) == ["blue", "red", nil])
            #expect(report.teams.first { $0.teamSlug == "red" }?.overdue == 1)
            #expect(report.overdueTasks.map(\.id) == [overdue.id])
            #expect(report.completionRate == 1.0 / 3.0)
        }
    }
}
