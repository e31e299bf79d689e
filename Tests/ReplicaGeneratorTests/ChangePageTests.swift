import CentralStore
import Foundation
import ReplicaGenerator
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing

@Suite("Change pages (the sync pull)")
struct ChangePageTests {
    @Test func aNewClientRefetchesEverythingInPages() async throws {
        try await withGenerator { store, world, generator in
            for index in 0..<7 { _ = try await store.createTask(try world.task("task \(index)", team: world.red)) }
            try await generator.rebuildAll()
            let path = generator.path(of: .team(world.red.id))
            let meta = try ReplicaMeta.read(path: path)

            var pages: [ChangePage] = []
            var epoch: String?
            var position: Int64 = 0
            repeat {
                let page = try ChangePage.read(path: path, epoch: epoch, since: position, limit: 3)
                pages.append(page)
                epoch = page.epoch
                position = page.upTo
            } while pages.last!.more
            #expect(pages.first?.refetch == true)
            #expect(pages.dropFirst().allSatisfy { !$0.refetch })
            #expect(pages.allSatisfy { $0.tasks.count + $0.members.count + $0.locations.count + $0.deleted.count <= 3 })
            #expect(pages.flatMap(\.tasks).count == 7)
            #expect(Set(pages.flatMap(\.members).map(\.personID)) == [world.ann.id, world.bo.id])
            #expect(pages.flatMap(\.locations).map(\.id) == [world.site.id])
            #expect(position == meta.rowCounter && epoch == meta.epoch)

            let nothingNew = try ChangePage.read(path: path, epoch: epoch, since: position, limit: 100)
            #expect(!nothingNew.refetch && !nothingNew.more && nothingNew.tasks.isEmpty && nothingNew.upTo == position)
        }
    }

    /// A date cell damaged beyond what 64 bits of milliseconds hold is served as the nearest that
    /// fits (the service stays up), and verify names the column: what a page is made from never traps.
    @Test func aDateDamagedBeyondWhatMillisecondsHoldIsServedClampedAndVerifyNamesIt() async throws {
        try await withRebuiltRedTask("meter") { _, generator, task, path in
            try ReplicaSQL.run(path, "UPDATE tasks SET due_at = \(Int64.max), started_at = \(Int64.min) WHERE id = \(task.id)")
            let page = try ChangePage.read(path: path, epoch: nil, since: 0, limit: 100)
            let served = try #require(page.tasks.first { $0.id == task.id })
            #expect(
                served.dueAt?.millisecondsSince1970 == .max && served.startedAt?.millisecondsSince1970 == .min && served.title == "meter")
            let drift = try await generator.verify().map(\.message)
            #expect(drift.contains { $0.contains("task \(task.id) differs from the master in due_at") }, "\(drift)")
        }
    }

    @Test func aCaughtUpClientGetsOnlyWhatChangedAndTombstones() async throws {
        try await withGenerator { store, world, generator in
            var ids: [Int64] = []
            for index in 0..<20 { ids.append(try await store.createTask(try world.task("task \(index)", team: world.red)).id) }
            try await generator.rebuildAll()
            let path = generator.path(of: .team(world.red.id))
            let start = try ChangePage.read(path: path, epoch: nil, since: 0, limit: 1_000)

            _ = try await store.updateTask(id: ids[3], try TaskChanges(title: "renamed"))
            _ = try await store.assignTask(id: ids[4], to: try Assignment(teamID: world.blue.id, assigneeID: nil))
            try await store.deleteTask(id: ids[5])
            try await generator.catchUp()

            let page = try ChangePage.read(path: path, epoch: start.epoch, since: start.upTo, limit: 1_000)
            #expect(!page.refetch && !page.more)
            #expect(page.tasks.map(\.id) == [ids[3]] && page.tasks.first?.title == "renamed")
            #expect(Set(page.deleted.filter { $0.table == "tasks" }.map(\.id)) == [ids[4], ids[5]])
            #expect(page.members.isEmpty && page.locations.isEmpty)
        }
    }

    @Test func aRebuiltFileOrAnImpossiblePositionMeansRefetch() async throws {
        try await withGenerator { store, world, generator in
            _ = try await store.createTask(try world.task(team: world.red))
            try await generator.rebuildAll()
            let path = generator.path(of: .team(world.red.id))
            let first = try ChangePage.read(path: path, epoch: nil, since: 0, limit: 100)
            #expect(try ChangePage.read(path: path, epoch: first.epoch, since: first.upTo + 50, limit: 100).refetch)
            try await generator.rebuildAll()
            let after = try ChangePage.read(path: path, epoch: first.epoch, since: first.upTo, limit: 100)
            #expect(after.refetch && after.epoch != first.epoch && after.tasks.count == 1)
        }
    }

    @Test func pagesShowWhatTheFieldSays() async throws {
        try await withGenerator { store, world, generator in
            let task = try await store.createTask(try world.task(team: world.red, assignee: world.ann))
            try await generator.rebuildAll()
            try generator.simulateWorker(.team(world.red.id), task: task.id, status: .completed, note: "fixed", by: world.ann.id)
            let path = generator.path(of: .team(world.red.id))
            let page = try ChangePage.read(path: path, epoch: nil, since: 0, limit: 100)
            #expect(page.tasks.first?.status == .completed && page.tasks.first?.completionNote == "fixed")
        }
    }
}
