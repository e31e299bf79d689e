import CentralStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import ReplicaGenerator
import SyncServer
import TeamworkModel
import TeamworkTestSupport
import Testing

/// A person's live streams are reserved as each is let in, not counted once its body runs: seen
/// failing before, 40 concurrent `stream=` pulls with one token all got 200 (checked, then counted
/// later). The watch's own limit on waits is set out of the way here, so every stream let in stays
/// open for its whole time and the count at the door is the only thing that can refuse one.
@Suite("Sync endpoint: stream budget")
struct StreamBudgetTests {
    @Test func twentyStreamsAtOnceWithOneTokenOpenExactlyItsFive() async throws {
        try await TestWorld.with("streams") { base, store in
            let fixtures = base.fixtures
            _ = try await store.createTask(try fixtures.task("red job", team: fixtures.red, assignee: fixtures.ann))
            let token = try await base.token(for: fixtures.ann, store)
            try await ReplicaGenerator(.init(databaseURL: base.url, directory: base.replicas)).rebuildAll()
            var configuration = SyncServer.Configuration(databaseURL: base.url, replicasDirectory: base.replicas)
            configuration.maximumWaitsPerPerson = 100
            configuration.maximumStreamsPerPerson = 5
            configuration.maximumRequestsPerPerson = 100
            let app = try SyncServer.makeApplication(configuration, logger: Logger(label: "test"))
            try await app.test(.live) { client in
                let port = try #require(client.port)
                let uri = "/v1/replicas/team-\(fixtures.red.id)/changes"
                let first = try await LocalHTTP.request(port: port, uri, headers: ["Authorization": "Bearer \(token)"])
                let page = try JSONSerialization.jsonObject(with: first.body) as? [String: Any]
                let epoch = try #require(page?["epoch"] as? String)
                let upTo = try #require(page?["up_to"] as? Int)
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<20 {
                        group.addTask {
                            try await LocalHTTP.stream(
                                port: port, "\(uri)?epoch=\(epoch)&since=\(upTo)&stream=3",
                                headers: ["Authorization": "Bearer \(token)"], timeout: .seconds(20)
                            ).status
                        }
                    }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
                let counts = Dictionary(grouping: statuses) { $0 }.mapValues(\.count)
                #expect(counts[200] == 5, "\(counts)")
                #expect(counts[429] == 15, "\(counts)")
            }
        }
    }
}
