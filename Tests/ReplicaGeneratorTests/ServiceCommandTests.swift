import CentralStore
import Foundation
import LocalPostgres
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing

/// The built `teamwork-service` binary, as cron or an operator runs it.
@Suite("teamwork-service commands")
struct ServiceCommandTests {
    static func service(_ arguments: [String]) async throws -> Tool.Run {
        try await Tool.service.run(arguments, environment: ["TEAMWORK_DATABASE_URL": nil])
    }

    /// An operator reads the log: one line per event with its metadata, as text
    /// (swift-log's format) or as one JSON object per line.
    @Test(arguments: ["text", "json"])
    func aRefusedRequestIsLoggedOnOneLineWithItsMetadata(format: String) async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "log-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let port = ServiceProcess.freePort()
            let service = ServiceProcess(
                [
                    "serve", "--database-url", url.connectionString, "--replicas", folder.appending(path: "replicas").path,
                    "--port", String(port), "--log-format", format,
                ], port: port, log: folder.path + "/service.log")
            try await service.start()
            defer { service.stopInBackground() }
            let refused = try await LocalHTTP.request(port: port, "/v1/replicas", headers: ["Authorization": "Bearer tw_not_a_real_token"])
            #expect(refused.status == 401)
            var line: Substring?
            _ = try await eventually(within: .seconds(5), every: .milliseconds(50)) {
                line = service.logText.split(separator: "\n").first { $0.contains("refused: unknown or revoked token") }
                return line != nil
            }
            let found = try #require(line, "\(service.logText)")
            if format == "json" {
                let fields = try #require(try JSONSerialization.jsonObject(with: Data(found.utf8)) as? [String: String])
                #expect(fields["level"] == "notice" && fields["path"] == "/v1/replicas" && fields["hb.request.id"] != nil, "\(fields)")
            } else {
                #expect(found.contains(" notice ") && found.contains("path=/v1/replicas") && found.contains("hb.request.id="), "\(found)")
            }
        }
    }

    /// A deployment split into parts still has the endpoint's figures: `serve` alone answers /metrics.
    @Test func serveOnItsOwnAnswersMetricsAndHealthWithItsWatchLoop() async throws {
        try await TestWorld.with("serve-metrics") { world, _ in
            let service = ServiceProcess.serve(databaseURL: world.url.connectionString, replicas: world.replicas)
            try await service.start()
            defer { service.stopInBackground() }
            let metrics = try await LocalHTTP.request(port: service.port ?? 0, "/metrics", timeout: .seconds(5))
            #expect(metrics.status == 200)
            for name in [
                "teamwork_sync_open_waits", "teamwork_sync_pages_answered_total", "teamwork_sync_access_checks_total",
                "teamwork_watch_seconds_since_progress",
            ] {
                #expect(metrics.text.contains(name), "\(name) in \(metrics.text)")
            }
            try await expectEventually("the watch reports its looks", within: .seconds(10)) {
                let health = try await LocalHTTP.request(port: service.port ?? 0, "/health", timeout: .seconds(5))
                return health.status == 200 && health.text.contains("\"watch\":\"ok\"")
            }
        }
    }

    @Test func onceThenVerifyThenDriftExitsTwo() async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "svc-replicas-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let world = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                _ = try await store.createTask(try world.task(team: world.red))
                return world
            }
            let common = ["--database-url", url.connectionString, "--replicas", folder.path]

            let first = try await Self.service(["replicate", "--once"] + common)
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.stdout.hasPrefix("No earlier run: rebuilt every replica"))

            _ = try await CentralStore.withStore(url) { try await $0.createTask(try world.task(team: world.blue)) }
            let second = try await Self.service(["replicate", "--once"] + common)
            #expect(second.stdout.contains("Applied 1 change to 1 replica"))
            await #expect(try Self.service(["verify"] + common).status == 0)

            try FileManager.default.removeItem(at: folder.appending(path: ReplicaID.team(world.blue.id).fileName))
            let drift = try await Self.service(["verify", "--json"] + common)
            #expect(drift.status == 2)
            #expect(drift.stdout.contains("\"replica\":\"team-\(world.blue.id).sqlite\""))
        }
    }

    @Test(arguments: [
        (["replicate", "--full", "--once"], Int32(64), "not both"),
        (["replicate", "--sweep", "0"], Int32(64), "--sweep must be positive"),
        (["replicate", "--once", "--database-url", "mysql://x"], Int32(78), "database URL must look like"),
        (["verify", "--database-url", "postgres://u:secret@/db?host=/nonexistent-dir"], Int32(69), "cannot reach the database"),
        (["frobnicate"], Int32(64), "frobnicate"),
    ])
    func badInvocationsGetOneLineAndADocumentedCode(_ arguments: [String], _ status: Int32, _ message: String) async throws {
        let run = try await Self.service(arguments)
        #expect(run.status == status, "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        #expect(run.stderr.contains(message))
        #expect(!run.stderr.contains("secret"))
    }
}
