import CentralStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import ReplicaGenerator
import SyncServer
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing

@Suite("Sync endpoint: pulls")
struct SyncServerTests {
    struct World: Sendable {
        var folder: URL
        var url: DatabaseURL
        var fixtures: Fixtures
        var floatingTask: Int64
        var annToken: String
        var cyToken: String
        var revokedToken: String
        var redTask: Int64
    }

    /// A master with tasks in both teams, generated replicas, tokens for Ann (red) and Cy (blue).
    func withServer(
        _ mode: TestingSetup = .router, waitLookInterval: Duration = .milliseconds(100),
        configure: (inout SyncServer.Configuration) -> Void = { _ in },
        _ body: @escaping @Sendable (World, any TestClientProtocol) async throws -> Void
    ) async throws {
        try await TestWorld.with("sync") { base, store in
            let (url, folder, fixtures) = (base.url, base.replicas, base.fixtures)
            let work = try await base.work(store)
            let ann = try await base.token(for: fixtures.ann, store)
            let cy = try await base.token(for: fixtures.cy, store)
            let revoked = try await store.issueToken(personID: fixtures.ann.id, label: "old")
            _ = try await store.revokeToken(id: revoked.token.id)
            let world = World(
                folder: folder, url: url, fixtures: fixtures, floatingTask: work.freeTask.id, annToken: ann, cyToken: cy,
                revokedToken: revoked.secret, redTask: work.annTask.id)
            try await ReplicaGenerator(.init(databaseURL: url, directory: folder)).rebuildAll()
            var configuration = SyncServer.Configuration(databaseURL: url, replicasDirectory: folder)
            configuration.metrics = { "" }
            configuration.waitLookInterval = waitLookInterval
            configure(&configuration)
            let app = try SyncServer.makeApplication(configuration, logger: Logger(label: "test"))
            try await app.test(mode) { client in try await body(world, client) }
        }
    }

    static func get(_ client: any TestClientProtocol, _ uri: String, token: String?) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await client.execute(uri: uri, method: .get, headers: headers)
    }

    static func post(_ client: any TestClientProtocol, _ uri: String, token: String?, body: String) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    static func decode<T: Decodable>(_ type: T.Type, _ response: TestResponse) throws -> T {
        try JSONOutput.decode(type, String(buffer: response.body))
    }

    @Test func aWorkerListsTheirReplicasAndPullsTheirTeam() async throws {
        try await withServer { world, client in
            let listing = try await Self.get(client, "/v1/replicas", token: world.annToken)
            #expect(listing.status == .ok)
            let body = String(buffer: listing.body)
            #expect(body.contains("\"name\":\"team-\(world.fixtures.red.id)\""))
            #expect(!body.contains("\"name\":\"team-\(world.fixtures.blue.id)\""))
            // Ann has no task of her own (hers is her team's): no personal replica exists, and none is listed
            // (seen before: listed as not available, and a pull of it said "try again shortly" for ever).
            #expect(!body.contains("\"name\":\"person-"), "\(body)")

            let pull = try await Self.get(client, "/v1/replicas/team-\(world.fixtures.red.id)/changes", token: world.annToken)
            #expect(pull.status == .ok)
            let page = try Self.decode(ChangePage.self, pull)
            #expect(page.refetch && !page.more)
            #expect(Set(page.tasks.map(\.id)) == [world.redTask, world.floatingTask])

            let again = try await Self.get(
                client, "/v1/replicas/team-\(world.fixtures.red.id)/changes?epoch=\(page.epoch)&since=\(page.upTo)", token: world.annToken
            )
            let empty = try Self.decode(ChangePage.self, again)
            #expect(!empty.refetch && empty.tasks.isEmpty && empty.upTo == page.upTo)
        }
    }

    @Test func everyoneSignedInPullsTheCommonReplicaWithoutEmails() async throws {
        try await withServer { world, client in
            let response = try await Self.get(client, "/v1/replicas/common/changes", token: world.cyToken)
            #expect(response.status == .ok)
            let page = try Self.decode(CommonPage.self, response)
            #expect(page.refetch && page.people.count == 4 && page.teams.map(\.slug).sorted() == ["blue", "red"])
            #expect(page.memberships.count == 3 && page.locations.map(\.id) == [world.fixtures.site.id])
            #expect(!String(buffer: response.body).contains("@example.org"))
        }
    }

    @Test func noBadOrRevokedTokensAre401() async throws {
        try await withServer { world, client in
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            for token in [nil, "tw_notarealtoken", TokenSecret.generate(), world.revokedToken] {
                let response = try await Self.get(client, uri, token: token)
                #expect(response.status == .unauthorized, "\(token ?? "none")")
                #expect(String(buffer: response.body).contains("\"error\""))
            }
            #expect(try await Self.get(client, "/health", token: nil).status == .ok)
        }
    }

    /// The scheme is matched without regard to case (RFC 9110, 11.1), spaces and tabs between it and the
    /// token are dropped (HTTP itself drops those around a field's value); anything else around the
    /// token, another scheme, no token, two of them or a Unicode space is refused, and a bad header is
    /// not made good by the phone app's cookie.
    @Test func theTokenIsReadFromAnyCaseOfBearerAndBlanksAroundItButNothingElse() async throws {
        try await withServer { world, client in
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            let token = world.annToken
            let expected: [(String, HTTPResponse.Status)] = [
                ("Bearer \(token)", .ok), ("bearer \(token)", .ok), ("BEARER \(token)", .ok), ("Bearer  \t\(token) \t", .ok),
                ("Basic \(token)", .unauthorized), ("Bearer", .unauthorized), ("Bearer ", .unauthorized),
                ("Bearer \(token)x", .unauthorized),
                ("Bearer x\(token)", .unauthorized), ("Bearer \(token) x", .unauthorized), ("Bearer\t\(token)", .unauthorized),
                (token, .unauthorized), ("Bearer \(token.uppercased())", .unauthorized), ("Bearer \u{A0}\(token)", .unauthorized),
                ("Bearer \(token)\u{3000}", .unauthorized), ("Bearer \(token), Bearer \(token)", .unauthorized),
            ]
            for (value, status) in expected {
                let response = try await client.execute(uri: uri, method: .get, headers: [.authorization: value])
                #expect(response.status == status, "\(value.debugDescription)")
            }
            var two = HTTPFields()
            two.append(HTTPField(name: .authorization, value: "Bearer \(token)"))
            two.append(HTTPField(name: .authorization, value: "Bearer \(token)"))
            #expect(try await client.execute(uri: uri, method: .get, headers: two).status == .unauthorized)
            var cookieToo: HTTPFields = [.authorization: "Basic \(token)", .cookie: "__Host-tw_device=\(token)"]
            cookieToo[HTTPField.Name("X-Teamwork-App")!] = "\(world.fixtures.ann.id)"
            #expect(try await client.execute(uri: uri, method: .get, headers: cookieToo).status == .unauthorized)
            cookieToo[.authorization] = nil
            #expect(try await client.execute(uri: uri, method: .get, headers: cookieToo).status == .ok)
        }
    }

    /// Issue 64, hole 3 (seen failing on a28f529: a `tw_device` cookie a sibling origin planted beside
    /// the phone's own signed the phone in as the insider, the first of two winning). The phone signs in
    /// with a `__Host-` cookie, which no other host can set; two cookies of one name are refused; a phone
    /// paired before (its `tw_device` alone) is signed in once more and given the `__Host-` cookie, so an
    /// upgrade signs no phone out (which would delete its unsent work).
    @Test func aPlantedOrDoubledPhoneCookieSignsNobodyIn() async throws {
        try await withServer { world, client in
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            let app = HTTPField.Name("X-Teamwork-App")!
            let (ann, cy) = (world.annToken, world.cyToken)
            let status: @Sendable (String) async throws -> HTTPResponse.Status = { cookie in
                var headers: HTTPFields = [.cookie: cookie]
                headers[app] = "\(world.fixtures.ann.id)"
                return try await client.execute(uri: uri, method: .get, headers: headers).status
            }
            let own = try await status("__Host-tw_device=\(ann)")
            // Planted beside the phone's own: the __Host- cookie is the phone's, whatever else comes.
            let besideHost = try await status("tw_device=\(cy); __Host-tw_device=\(ann)")
            // Two of one name (one planted from another port of the host, or from a subdomain): neither is taken.
            let doubled = try await status("__Host-tw_device=\(cy); __Host-tw_device=\(ann)")
            let doubledLegacy = try await status("tw_device=\(cy); tw_device=\(ann)")
            #expect(own == .ok && besideHost == .ok && doubled == .badRequest && doubledLegacy == .badRequest)
            var split = HTTPFields()
            split[app] = "\(world.fixtures.ann.id)"
            split.append(HTTPField(name: .cookie, value: "__Host-tw_device=\(ann)"))
            split.append(HTTPField(name: .cookie, value: "__Host-tw_device=\(cy)"))
            #expect(try await client.execute(uri: uri, method: .get, headers: split).status == .badRequest)
            // A name that merely ends the same is another cookie.
            let lookAlike = try await status("x__Host-tw_device=\(cy); __Host-tw_device=\(ann)")
            #expect(lookAlike == .ok)
            // A phone paired before __Host- cookies: taken, and at its listing given the new cookie, the old one ended.
            var legacy: HTTPFields = [.cookie: "tw_device=\(ann)"]
            legacy[app] = "new"
            let listed = try await client.execute(uri: "/v1/replicas", method: .get, headers: legacy)
            let set = listed.headers[values: .setCookie]
            #expect(listed.status == .ok)
            #expect(
                set.contains { $0.hasPrefix("__Host-tw_device=\(ann);") }
                    && set.contains { $0.hasPrefix("tw_device=;") && $0.contains("Max-Age=0") })
        }
    }

    @Test func anotherTeamsOrPersonsReplicaIs403() async throws {
        try await withServer { world, client in
            let blue = try await Self.get(client, "/v1/replicas/team-\(world.fixtures.blue.id)/changes", token: world.annToken)
            #expect(blue.status == .forbidden)
            let personal = try await Self.get(client, "/v1/replicas/person-\(world.fixtures.bo.id)/changes", token: world.annToken)
            #expect(personal.status == .forbidden)
            let cyBlue = try await Self.get(client, "/v1/replicas/team-\(world.fixtures.blue.id)/changes", token: world.cyToken)
            #expect(cyBlue.status == .ok)
        }
    }

    @Test(arguments: [
        ("/changes?since=-1", 400), ("/changes?since=abc", 400), ("/changes?limit=0", 400), ("/changes?limit=999999", 400),
    ])
    func badQueriesAre400(_ suffix: String, _ status: Int) async throws {
        try await withServer { world, client in
            let response = try await Self.get(client, "/v1/replicas/team-\(world.fixtures.red.id)\(suffix)", token: world.annToken)
            #expect(response.status.code == status)
        }
    }

    @Test func unknownReplicaNamesAre404() async throws {
        try await withServer { world, client in
            for name in ["team-abc", "secrets", "..%2F..%2Fetc%2Fpasswd", "team-0"] {
                let response = try await Self.get(client, "/v1/replicas/\(name)/changes", token: world.annToken)
                #expect(response.status == .notFound, "\(name)")
            }
        }
    }
}
