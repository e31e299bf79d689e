import Foundation
import Logging
import PostgresNIO
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

@Suite("Change feed")
struct ChangeFeedTests {
    @Test func everyTaskChangeGetsExactlyOnePositionAndADeleteLeavesATombstone() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let start = try await store.feed().last?.position ?? 0
            let task = try await store.createTask(try world.task(team: world.red))
            _ = try await store.updateTask(id: task.id, try TaskChanges(title: "renamed"))
            _ = try await store.assignTask(id: task.id, to: try Assignment(teamID: world.blue.id, assigneeID: world.cy.id))
            _ = try await store.cancelTask(id: task.id)
            try await store.deleteTask(id: task.id)

            let entries = try await store.feed(after: start)
            #expect(entries.map(\.operation) == ["insert", "update", "update", "update", "delete"])
            #expect(entries.allSatisfy { $0.entity == "task" && $0.entityID == task.id })
            #expect(zip(entries, entries.dropFirst()).allSatisfy { $0.position < $1.position })
            let move = entries[2]
            #expect(move.oldTeamID == world.red.id && move.teamID == world.blue.id && move.assigneeID == world.cy.id)
            let tombstone = entries[4]
            #expect(tombstone.teamID == nil && tombstone.oldTeamID == world.blue.id && tombstone.oldAssigneeID == world.cy.id)
        }
    }

    @Test func aStatementChangingManyTasksGivesEachItsOwnHistoryEntryAndPosition() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            var bos: [Int64] = []
            for title in ["one", "two", "three"] {
                bos.append(try await store.createTask(try world.task(title, team: world.red, assignee: world.bo)).id)
            }
            let anns = try await store.createTask(try world.task("ann's", team: world.red, assignee: world.ann)).id
            let start = try await store.feed().last?.position ?? 0
            // One DELETE of the membership; its foreign key releases all of Bo's red tasks in one UPDATE.
            try await store.removeMember(teamID: world.red.id, personID: world.bo.id)

            let taskEntries = try await store.feed(after: start).filter { $0.entity == "task" }
            #expect(taskEntries.map(\.entityID).sorted() == bos)
            #expect(taskEntries.allSatisfy { $0.operation == "update" && $0.oldAssigneeID == world.bo.id && $0.assigneeID == nil })
            for id in bos {
                let released = try await store.history(taskID: id).filter { $0.action == "updated" }
                #expect(released.count == 1)
                #expect(released.first?.changes["assignee_id"]?.old == "\(world.bo.id)")
                #expect(released.first?.changes["status"]?.new == "open")
            }
            #expect(try await store.history(taskID: anns).map(\.action) == ["created"])
        }
    }

    @Test func anUpdateThatChangesNothingAddsNoPositionAndNoHistory() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let task = try await store.createTask(try world.task("same", team: world.red))
            let before = try await store.feed().count
            let unchanged = try await store.updateTask(id: task.id, try TaskChanges(title: "same"))
            #expect(unchanged.version == task.version)
            #expect(try await store.feed().count == before)
            #expect(try await store.history(taskID: task.id).count == 1)
        }
    }

    @Test func aFailedChangeLeavesNoPosition() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let before = try await store.feed().count
            await #expect(throws: TeamworkError.self) {
                try await store.importTasks(csv: "title,team\nok,red\nbad,nope\n")
            }
            await #expect(throws: TeamworkError.self) {
                try await store.createTask(try world.task(team: world.red, assignee: world.cy))
            }
            #expect(try await store.feed().count == before)
        }
    }

    @Test func commonDataChangesAreInTheFeedToo() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let inserted = try await store.feed().filter { $0.operation == "insert" }.map(\.entity)
            #expect(inserted.filter { $0 == "person" }.count == 4)
            #expect(inserted.filter { $0 == "team" }.count == 2)
            #expect(inserted.filter { $0 == "membership" }.count == 3)
            #expect(inserted.filter { $0 == "location" }.count == 1)
            // A person's first team became their default: a change of the person too.
            #expect(try await store.feed().filter { $0.entity == "person" && $0.operation == "update" }.count == 3)
            let before = try await store.feed().count
            try await store.removeMember(teamID: world.red.id, personID: world.bo.id)
            let after = try await store.feed().dropFirst(before)
            #expect(
                after.contains {
                    $0.entity == "membership" && $0.operation == "delete" && $0.teamID == world.red.id && $0.entityID == world.bo.id
                })
            // Red was Bo's default team: that is cleared with it (a change of Bo).
            #expect(after.map(\.entity).sorted() == ["membership", "person"], "\(after)")
        }
    }

    /// Positions are handed out in commit order: a writer that starts later but
    /// commits first cannot take a position below one a reader may already have seen.
    @Test func aConcurrentWriterWaitsSoPositionsFollowCommitOrder() async throws {
        try await TestDatabase.withFresh { url in
            let world = try await CentralStore.withStore(url) { try await Fixtures.seed($0) }
            try await CentralStore.withStore(url) { slow in
                try await slow.connection.query("BEGIN", logger: slow.logger)
                _ = try await slow.insertTask(try world.task("slow", team: world.red), on: slow.connection)

                let fast = Task {
                    try await CentralStore.withStore(url) { try await $0.createTask(try world.task("fast", team: world.red)) }
                }
                try await Task.sleep(for: .milliseconds(300))
                let visible = try await CentralStore.withStore(url) { try await $0.listTasks() }
                #expect(visible.isEmpty, "the second writer must wait for the first to commit")
                try await slow.connection.query("COMMIT", logger: slow.logger)
                let fastTask = try await fast.value

                let tasks = try await slow.feed().filter { $0.entity == "task" }
                #expect(tasks.count == 2)
                #expect(tasks.last?.entityID == fastTask.id)
            }
        }
    }

    @Test func aCommittedChangeWakesAListenerOnTheFeedChannel() async throws {
        try await TestDatabase.withFresh { url in
            let world = try await CentralStore.withStore(url) { try await Fixtures.seed($0) }
            let logger = Logger(label: "test")
            let listener = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 9, logger: logger)
            defer { Task { try? await listener.close() } }
            let (ready, readyContinuation) = AsyncStream<Void>.makeStream()
            let received = Task {
                try await listener.listen(on: "teamwork_feed") { notifications in
                    readyContinuation.yield()
                    for try await _ in notifications { return true }
                    return false
                }
            }
            for await _ in ready { break }
            _ = try await CentralStore.withStore(url) { try await $0.createTask(try world.task(team: world.red)) }
            let timeout = Task {
                try await Task.sleep(for: .seconds(10))
                received.cancel()
            }
            #expect(try await received.value == true)
            timeout.cancel()
        }
    }
}
