import Foundation
import ReplicaGenerator
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// An ETA belongs to one plan of one person's day (issue 50). Seen on main: a visit moved to
/// another day kept the old day's expected start, and a task dragged from one worker to another
/// kept the first one's, on the master, the replica and the worker's phone.
@Suite("An expected start ends with its plan")
struct ExpectedStartTests {
    /// Task `id` planned for Ann at 10:00 tomorrow (UTC), through the day planner's own apply.
    static func plan(_ store: CentralStore, _ world: Fixtures, _ id: Int64, to person: Int64, at start: Date) async throws -> FieldTask {
        let task = try await store.task(id: id)
        let day = Zone.utc.date(of: start)
        let applied = try await store.applyDayPlan(
            teamID: world.red.id, day: day,
            [PlannedAssignment(taskID: id, version: task.version, assigneeID: person, plannedStart: start)])
        return try #require(applied.first)
    }

    static func replicaStart(_ generator: ReplicaGenerator, _ world: Fixtures, _ id: Int64) async throws -> Date?? {
        try await generator.catchUp()
        return try generator.contents(.team(world.red.id)).tasks.first { $0.master.id == id }.map { $0.master.plannedStart }
    }

    @Test func aChangeOfAssigneeWindowOrDayACancellationOrAReopeningEndsTheExpectedStartEverywhere() async throws {
        try await withGenerator { store, world, generator in
            try await generator.rebuildAll()
            let tomorrow = Zone.utc.date(of: Date()).adding(days: 1)
            let ten = Zone.utc.instant(tomorrow, LocalTime(hour: 10, minute: 0)!)
            var new = try world.task("meter", team: world.red, assignee: world.ann)
            new.window = try TimeWindow(start: ten, end: ten.addingTimeInterval(7200))
            let id = try await store.createTask(new).id
            let changes: [(String, () async throws -> Void)] = [
                (
                    "moved to another day",
                    {
                        let later = ten.addingTimeInterval(3 * 86_400)
                        _ = try await store.updateTask(
                            id: id, try TaskChanges(window: .some(try TimeWindow(start: later, end: later.addingTimeInterval(7200)))))
                        _ = try await store.updateTask(
                            id: id, try TaskChanges(window: .some(try TimeWindow(start: ten, end: ten.addingTimeInterval(7200)))))
                    }
                ),
                (
                    "given to Bo",
                    { _ = try await store.assignTask(id: id, to: try Assignment(teamID: world.red.id, assigneeID: world.bo.id)) }
                ),
                ("cancelled", { _ = try await store.cancelTask(id: id) }),
            ]
            for (what, change) in changes {
                let planned = try await Self.plan(store, world, id, to: world.ann.id, at: ten.addingTimeInterval(1800))
                #expect(planned.plannedStart != nil)
                #expect(
                    try await Self.replicaStart(generator, world, id) == .some(planned.plannedStart), "the replica has the plan's start")
                try await change()
                #expect(try await store.task(id: id).plannedStart == nil, "\(what): the master's ETA is gone")
                #expect(try await Self.replicaStart(generator, world, id) == .some(nil), "\(what): the replica's too")
                if try await store.task(id: id).status == .cancelled { _ = try await store.reopenTask(id: id) }
            }
            // Reopened work had its ETA ended by the cancellation; a completion keeps it (what was planned), a reopening ends it.
            let planned = try await Self.plan(store, world, id, to: world.ann.id, at: ten.addingTimeInterval(3600))
            _ = try await store.rows(
                "UPDATE tasks SET status = 'completed', completed_at = now(), completed_by = assignee_id WHERE id = \(id)")
            #expect(try await store.task(id: id).plannedStart == planned.plannedStart)
            _ = try await store.reopenTask(id: id)
            #expect(try await store.task(id: id).plannedStart == nil, "reopened: the ETA is gone")
        }
    }

    /// The day planner moving a task to another worker at the same time keeps the start it gave.
    @Test func thePlannersOwnReassignmentKeepsItsStart() async throws {
        try await withGenerator { store, world, _ in
            let tomorrow = Zone.utc.date(of: Date()).adding(days: 1)
            let ten = Zone.utc.instant(tomorrow, LocalTime(hour: 10, minute: 0)!)
            let id = try await store.createTask(try world.task("meter", team: world.red, assignee: world.ann)).id
            _ = try await Self.plan(store, world, id, to: world.ann.id, at: ten)
            let moved = try await Self.plan(store, world, id, to: world.bo.id, at: ten)
            #expect(moved.assigneeID == world.bo.id && moved.plannedStart == ten)
        }
    }
}
