import Foundation
import Logging
import PostgresNIO
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// The budgets of docs/security.md ("Budgets"), each flooded concurrently against the real
/// service (on a dual-stack socket, `--host ::`, so IPv4 and IPv6 clients are two addresses), with
/// the master's connections watched while it happens: the budget holds, and everyone else is
/// unaffected. Seen failing before on each: 400 junk sign-ins all reached the master (each on a
/// connection of its own) and PostgreSQL refused others with "too many clients"; one address's
/// junk on IPv4 locked a manager on IPv6 out; 50 board actions at once took 50 connections;
/// 40 streams with one token all opened.
@Suite("Budgets under a flood", .serialized)
struct BudgetFloodTests {
    final class Scene: @unchecked Sendable {
        let url: DatabaseURL
        let service: ServiceProcess
        let port: Int
        let maxToken: String
        let annToken: String
        let task: Int64
        let team: Int64

        init(url: DatabaseURL, service: ServiceProcess, port: Int, maxToken: String, annToken: String, task: Int64, team: Int64) {
            (self.url, self.service, self.port, self.maxToken, self.annToken, self.task, self.team) = (
                url, service, port, maxToken, annToken, task, team
            )
        }

        /// A sign-in as a browser sends it, from `host`.
        func signIn(token: String, host: String = "127.0.0.1") async throws -> LocalHTTP.Response {
            let nonce = TokenSecret.randomBase64URL()
            return try await LocalHTTP.request(
                .post, port: port, "/board/sign-in",
                headers: [
                    "Cookie": "__Host-tw_signin=\(nonce)", "Content-Type": "application/x-www-form-urlencoded",
                ], body: Data("csrf=\(nonce)&token=\(token)".utf8), timeout: .seconds(30), host: host)
        }
    }

    static func withScene(_ body: (Scene) async throws -> Void) async throws {
        try await TestDatabase.withFresh(ahead: true) { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "budget-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let (maxToken, annToken, task, team) = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                let task = try await store.createTask(try world.task("red job", team: world.red, assignee: world.ann))
                return (
                    try await store.issueToken(personID: world.manager.id, label: "laptop").secret,
                    try await store.issueToken(personID: world.ann.id, label: "phone").secret, task.id, world.red.id
                )
            }
            let port = ServiceProcess.freePort()
            let service = ServiceProcess(
                [
                    "run", "--database-url", url.connectionString, "--replicas", folder.appending(path: "replicas").path,
                    "--host", "::", "--port", String(port), "--sweep", "0.5",
                ],
                port: port, log: folder.path + "/service.log")
            try await service.start()
            defer { service.stopInBackground() }
            try await expectEventually("the service is healthy before the flood", within: .seconds(30)) {
                await LocalHTTP.health(port: port)?.status == 200
            }
            try await body(Scene(url: url, service: service, port: port, maxToken: maxToken, annToken: annToken, task: task, team: team))
        }
    }

    /// What a flood came to: each request's status, the master's client connections before and at
    /// most during it, and whether /health always answered 200.
    struct Flooded {
        var statuses: [Int]
        var before: Int
        var most: Int
        var healthy: Bool
        var counts: [Int: Int] { Dictionary(grouping: statuses) { $0 }.mapValues(\.count) }
    }

    /// Sends `count` requests at once (`request(i)` answers a status, -1 for none) while sampling the
    /// master's connections (on one connection of the test's own) and the service's /health.
    static func flood(_ scene: Scene, _ count: Int, _ request: @escaping @Sendable (Int) async -> Int) async throws -> Flooded {
        let statuses = Locked<[Int]>([])
        let watched = try await watching(scene.url, port: scene.port) {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<count {
                    group.addTask {
                        let status = await request(index)
                        statuses.mutate { $0.append(status) }
                    }
                }
            }
        }
        return Flooded(statuses: statuses.value, before: watched.before, most: watched.most, healthy: watched.healthy)
    }

    /// Runs `flood` while sampling the master's connections and the service's /health; the most
    /// connections seen, the connections before, and whether /health always answered 200.
    static func watching(
        _ url: DatabaseURL, port: Int, _ flood: () async throws -> Void
    ) async throws
        -> (most: Int, before: Int, healthy: Bool)
    {
        // Measured with the machine to itself among the heavy tests (MachineAlone).
        try await MachineAlone.run { try await measuring(url, port: port, flood) }
    }

    private static func measuring(
        _ url: DatabaseURL, port: Int, _ flood: () async throws -> Void
    ) async throws
        -> (most: Int, before: Int, healthy: Bool)
    {
        let logger = Logger(label: "test")
        let connection = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 99, logger: logger)
        func backends() async throws -> Int {
            try await connection.query(
                "SELECT count(*)::int FROM pg_stat_activity WHERE backend_type = 'client backend' AND datname = current_database()",
                logger: logger
            )
            .collect()[0].decode(Int.self)
        }
        let before = try await backends()
        let done = Locked(false)
        async let sampled: (Int, Bool) = {
            var (most, healthy) = (0, true)
            // Back to back until the flood ends: each look (a query, then /health) paces the next.
            while !done.value {
                most = max(most, (try? await backends()) ?? 0)
                let answer = await LocalHTTP.health(port: port)
                if answer?.status != 200 {
                    // Said in the log: a flood's failure names what /health answered (or that it did not).
                    if healthy {
                        print("/health during the flood: \(answer.map { "\($0.status) \($0.text.prefix(400))" } ?? "no answer in 5 s")")
                    }
                    healthy = false
                }
            }
            return (most, healthy)
        }()
        do {
            try await flood()
        } catch {
            done.mutate { $0 = true }
            _ = await sampled
            try? await connection.close()
            throw error
        }
        done.mutate { $0 = true }
        let (most, healthy) = await sampled
        try await connection.close()
        return (most, before, healthy)
    }

    @Test func aThousandJunkSignInsFromOneAddressCostTheMasterNoConnectionAndLockNoOneElseOut() async throws {
        try await Self.withScene { scene in
            let watched = try await Self.flood(scene, 1_000) { _ in
                (try? await scene.signIn(token: "tw_" + TokenSecret.randomBase64URL()).status) ?? -1
            }
            #expect(watched.statuses.count == 1_000)
            #expect(watched.counts[401, default: 0] <= 10, "at most ten attempts a minute reach the master: \(watched.counts)")
            #expect(watched.statuses.allSatisfy { [401, 429, 503].contains($0) }, "\(watched.counts)")
            #expect(
                watched.most <= watched.before + 2,
                "the master's connections: \(watched.before) before, \(watched.most) at most during the flood")
            #expect(watched.healthy, "/health answered 200 throughout")
            // A manager at another address (IPv6 here; the junk came over IPv4) signs in at once.
            let max = try await scene.signIn(token: scene.maxToken, host: "::1")
            #expect(max.status == 303 && max.header("location") == "/board", "\(max.status) \(max.text.prefix(300))")
            // The devices are unaffected.
            let pull = try await LocalHTTP.request(
                port: scene.port, "/v1/replicas/team-\(scene.team)/changes",
                headers: ["Authorization": "Bearer \(scene.annToken)"])
            #expect(pull.status == 200)
        }
    }

    @Test func fiftyBoardActionsAtOnceHoldAtMostTheBoardsShareOfTheMastersConnections() async throws {
        try await Self.withScene { scene in
            let signedIn = try await scene.signIn(token: scene.maxToken)
            let cookie = try #require(
                signedIn.header("set-cookie")?.split(separator: "\n")
                    .first { $0.hasPrefix("__Host-tw_session=") }?.split(separator: ";").first.map(String.init))
            let page = try await LocalHTTP.request(port: scene.port, "/board/tasks/\(scene.task)", headers: ["Cookie": cookie])
            let csrf = try #require(page.text.firstMatch(of: /name="csrf" value="([A-Za-z0-9_-]{43})"/)?.1)
            let watched = try await Self.flood(scene, 50) { index in
                let priority = ["low", "normal", "high", "urgent"][index % 4]
                return
                    (try? await LocalHTTP.request(
                        .post, port: scene.port, "/board/tasks/\(scene.task)/priority",
                        headers: [
                            "Cookie": cookie, "Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded",
                        ], body: Data("csrf=\(csrf)&priority=\(priority)".utf8)
                    ).status) ?? -1
            }
            #expect(watched.statuses.allSatisfy { [200, 429, 503].contains($0) }, "\(watched.counts)")
            #expect(watched.statuses.contains(200))
            #expect(watched.most <= watched.before + 4, "the board's share is 4: \(watched.before) before, \(watched.most) at most")
            #expect(watched.healthy)
        }
    }

    @Test func aThousandJunkTokensFromOneAddressAreRefusedBeforeTheMasterAndKnownDevicesThereGoOn() async throws {
        try await Self.withScene { scene in
            let pull = "/v1/replicas/team-\(scene.team)/changes"
            try await expectEventually("Ann's device is known", within: .seconds(20)) {
                try await LocalHTTP.request(port: scene.port, pull, headers: ["Authorization": "Bearer \(scene.annToken)"]).status == 200
            }
            let annDuring = Locked<[Int]>([])
            let watched = try await Self.flood(scene, 1_000) { index in
                let junk = "tw_" + TokenSecret.randomBase64URL()
                let status =
                    (try? await LocalHTTP.request(port: scene.port, "/v1/replicas", headers: ["Authorization": "Bearer \(junk)"]).status)
                    ?? -1
                if index % 100 == 0 {
                    // A known device at the same address, in the middle of the flood.
                    let ann =
                        (try? await LocalHTTP.request(port: scene.port, pull, headers: ["Authorization": "Bearer \(scene.annToken)"]).status)
                        ?? -1
                    annDuring.mutate { $0.append(ann) }
                }
                return status
            }
            let counts = watched.counts
            #expect(watched.statuses.allSatisfy { [401, 429, 503].contains($0) }, "\(counts)")
            #expect(
                counts[401, default: 0] <= 30 + 64, "at most 30 unknown tokens a minute, and 64 checks at once, reach the master: \(counts)"
            )
            #expect(annDuring.value.allSatisfy { $0 == 200 }, "a known device at the flooding address: \(annDuring.value)")
            #expect(watched.most <= watched.before + 2, "the master's connections: \(watched.before) before, \(watched.most) at most")
            #expect(watched.healthy)
        }
    }

    @Test func fiveHundredJunkSessionCookiesCostTheMasterAtMostEighteenLookups() async throws {
        try await Self.withScene { scene in
            let watched = try await Self.flood(scene, 500) { _ in
                (try? await LocalHTTP.request(
                    port: scene.port, "/board", headers: ["Cookie": "__Host-tw_session=\(TokenSecret.randomBase64URL())"]
                ).status) ?? -1
            }
            let counts = watched.counts
            // 303: looked up, unknown, sent to sign in; 429 and 503: refused before the master was asked.
            #expect(watched.statuses.allSatisfy { [303, 429, 503].contains($0) }, "\(counts)")
            #expect(counts[303, default: 0] <= 10 + 8, "ten unknown sessions a minute and eight lookups at once: \(counts)")
            #expect(watched.most <= watched.before + 2 && watched.healthy, "\(watched)")
            let max = try await scene.signIn(token: scene.maxToken, host: "::1")
            #expect(max.status == 303 && max.header("location") == "/board")
        }
    }

    /// A manager's CLI commands (plans, imports, exports, lists) each hold one connection of the
    /// manager's own role: its CONNECTION LIMIT is their budget. At the limit, five commands at once
    /// each end at once with one line and exit 69, and change nothing; with room again, they run.
    @Test func aManagersCommandsAtTheirRolesConnectionLimitEndInOneLineAndChangeNothing() async throws {
        try await TestDatabase.withFresh(ahead: true) { url in
            let role = "tw_cli_" + UUID().uuidString.prefix(8).lowercased()
            try await CentralStore.withStore(url) { store in
                _ = try await Fixtures.seed(store)
                _ = try await store.rows(PostgresQuery(unsafeSQL: "CREATE ROLE \(role) LOGIN CONNECTION LIMIT 2 IN ROLE teamwork_manager"))
            }
            var asManager = url
            asManager.username = role
            let logger = Logger(label: "test")
            var held: [PostgresConnection] = []
            for id in 0..<2 {
                held.append(
                    try await PostgresConnection.connect(configuration: try asManager.connectionConfiguration(), id: id, logger: logger))
            }
            let manager = ManagerTool(asManager)
            let runs = try await withThrowingTaskGroup(of: Tool.Run.self) { group in
                for index in 0..<5 {
                    group.addTask { try await manager.run(["task", "create", "--title", "flood \(index)", "--team", "red"]) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for run in runs {
                #expect(run.status == 69, "\(run.stderr)")
                #expect(run.stderr.split(separator: "\n").count == 1 && run.stderr.contains("no connection left"), "\(run.stderr)")
            }
            try await held.removeLast().close()
            // The backend of the closed connection ends a moment later: until then the role is still at its limit.
            var room = try await manager.run(["task", "create", "--title", "with room", "--team", "red"])
            _ = try await eventually(within: .seconds(10)) {
                if room.status == 0 { return true }
                room = try await manager.run(["task", "create", "--title", "with room", "--team", "red"])
                return room.status == 0
            }
            #expect(room.status == 0, "\(room.stderr)")
            for connection in held { try await connection.close() }
            let titles = try await CentralStore.withStore(url) { try await $0.listTasks().map(\.title) }
            #expect(titles == ["with room"], "nothing of the refused commands was made")
            try await CentralStore.withStore(url) { _ = try await $0.rows(PostgresQuery(unsafeSQL: "DROP ROLE \(role)")) }
        }
    }
}
