import CentralStore
import Foundation
import ReplicaGenerator
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import WorkerClient

/// What `watch` does with a live stream: each line is a page applied where the device's copy
/// stands, once; a page from anywhere else leaves the copy alone (a whole sync follows).
@Suite("A device following a live stream")
struct StreamedPagesTests {
    @Test func aStreamedPageIsAppliedOnceWhereTheCopyStandsAndAPageFromElsewhereChangesNothing() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            #expect(try await WorkerTool.run(setup.annHome, "login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            let store = try LocalStore(path: setup.annHome.appending(path: "local.sqlite").path)
            let client = SyncClient(server: URL(string: setup.server.url)!, token: setup.annToken)
            let synchronizer = Synchronizer(client: client, store: store)
            let red = "team-\(setup.world.red.id)"
            let before = try #require(try store.replicas().first { $0.name == red })

            // The device follows red; a manager's new task reaches it as one line of the stream.
            let lines = client.follow(red, epoch: before.epoch, since: before.position, limit: 100, for: .seconds(20))
            let task = try await CentralStore.withStore(setup.url) { store in
                try await store.createTask(try setup.world.task("streamed to ann", team: setup.world.red, assignee: setup.world.ann))
            }
            _ = try await ReplicaGenerator(.init(databaseURL: setup.url, directory: setup.folder)).catchUp()
            var iterator = lines.makeAsyncIterator()
            let line = try #require(try await iterator.next())

            #expect(try synchronizer.apply(streamed: line, to: red), "goes on from where the copy stood")
            #expect(try store.tasks().filter { $0.title == "streamed to ann" }.map(\.id) == [task.id])
            let after = try #require(try store.replicas().first { $0.name == red })
            #expect(after.position > before.position)
            // The same page again does not go on from the copy's new position: nothing is applied twice.
            #expect(try !synchronizer.apply(streamed: line, to: red))
            #expect(try store.replicas().first { $0.name == red }?.position == after.position)
            // A page of another epoch (a rebuilt replica) is not applied either.
            let elsewhere = try #require(
                String(data: line, encoding: .utf8)?.replacingOccurrences(of: after.epoch ?? "-", with: "another-epoch"))
            #expect(try !synchronizer.apply(streamed: Data(elsewhere.utf8), to: red))
            #expect(try store.replicas().first { $0.name == red } == after)
        }
    }
}
