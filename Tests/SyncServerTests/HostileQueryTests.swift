import CentralStore
import Foundation
import Hummingbird
import HummingbirdTesting
import SyncProtocol
import TeamworkModel
import TeamworkTestSupport
import Testing

/// Query parameters a client makes up cannot fill the server's memory.
@Suite("Sync endpoint: made-up query parameters")
struct HostileQueryTests {
    typealias Pulls = SyncServerTests

    /// Seen failing before: a method the document does not list for a path got 404.
    @Test func aKnownPathAskedWithAnotherMethodIs405WithAllowAndAnUnknownPathIs404() async throws {
        try await SyncServerTests().withServer { world, client in
            let red = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            for (method, path, allow) in [
                (HTTPRequest.Method.put, red, "GET, POST"), (.delete, red, "GET, POST"),
                (.post, "/health", "GET"), (.delete, "/v1/replicas", "GET"), (.patch, "/v1/positions", "GET"),
            ] {
                let response = try await client.execute(uri: path, method: method, headers: [.authorization: "Bearer \(world.annToken)"])
                #expect(response.status == .methodNotAllowed && response.headers[.allow] == allow, "\(method) \(path): \(response.status)")
            }
            #expect(try await client.execute(uri: "/v1/nothing", method: .get).status == .notFound)
            #expect(try await client.execute(uri: "/v1/replicas/team-99/changes", method: .put).status == .methodNotAllowed)
            // A route's own 404 (a replica not generated yet) stays a 404.
            #expect(
                try await Pulls.get(client, "/v1/replicas/person-\(world.fixtures.ann.id)/changes", token: world.annToken).status
                    == .notFound)
        }
    }

    @Test func aParameterLongerThanAnyTheServerMakesIsRefusedWith400() async throws {
        try await SyncServerTests().withServer { world, client in
            let red = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            let long = try await Pulls.get(client, red + "?epoch=" + String(repeating: "A", count: 60_000), token: world.annToken)
            #expect(long.status == .badRequest)
            #expect(String(buffer: long.body).contains("epoch is longer than 64 characters"))
            let since = try await Pulls.get(client, red + "?since=" + String(repeating: "1", count: 100), token: world.annToken)
            #expect(since.status == .badRequest)
            #expect(try await Pulls.get(client, red + "?epoch=\(UUID().uuidString)", token: world.annToken).status == .ok)
        }
    }

    /// Seen failing before: 3,000 pulls with made-up epochs grew the service by
    /// 174 MB while the page cache said 2.5 MB; each made-up epoch was a key.
    @Test func pullsWithMadeUpEpochsAndPositionsShareTheOneRefetchPageAndCountInTheBudget() async throws {
        try await SyncServerTests().withServer(.live) { world, client in
            let port = try #require(client.port)
            func metric(_ name: String) async throws -> Int { try await LocalHTTP.metric(name, port: port) }
            let red = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            let page = try Pulls.decode(ChangePage.self, try await Pulls.get(client, red, token: world.annToken))
            let (readsBefore, bytesBefore) = (
                try await metric("teamwork_sync_pages_read_total"), try await metric("teamwork_sync_page_cache_bytes")
            )
            for index in 0..<100 {
                let answer = try await Pulls.get(client, red + "?epoch=\(UUID().uuidString)&since=\(index)&limit=1", token: world.annToken)
                #expect(try answer.status == .ok && Pulls.decode(ChangePage.self, answer).refetch)
            }
            let reads = try await metric("teamwork_sync_pages_read_total") - readsBefore
            #expect(reads <= 2, "made-up epochs are all the one refetch page: \(reads) reads")
            // A position past the file's counter is a refetch too: read, but never kept under the made-up position.
            for index in 0..<100 {
                let answer = try await Pulls.get(
                    client, red + "?epoch=\(page.epoch)&since=\(1_000_000 + index)&limit=1", token: world.annToken)
                #expect(try answer.status == .ok && Pulls.decode(ChangePage.self, answer).refetch)
            }
            let grown = try await metric("teamwork_sync_page_cache_bytes") - bytesBefore
            #expect(grown < 4_000, "one page and its key kept, not two hundred: \(grown) bytes")
        }
    }
}
