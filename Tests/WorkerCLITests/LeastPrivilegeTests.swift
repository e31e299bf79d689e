import Foundation
import PostgresNIO
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// The service runs as a login role that holds `teamwork_service` and nothing more,
/// as the systemd unit and docker-compose run it.
@Suite("Least privilege end to end")
struct LeastPrivilegeTests {
    @Test func theWholeLoopWorksWithTheServiceRunningAsAMemberOfTeamworkServiceOnly() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            try await setup.server.stop()
            let role = "tw_svc_" + UUID().uuidString.prefix(8).lowercased()
            try await CentralStore.withStore(setup.url) { store in
                _ = try await store.rows(PostgresQuery(unsafeSQL: "CREATE ROLE \(role) LOGIN NOSUPERUSER IN ROLE teamwork_service"))
            }
            var asService = setup.url
            asService.username = role
            let port = ServiceProcess.freePort()
            let service = ServiceProcess(
                [
                    "run", "--database-url", asService.connectionString, "--replicas", setup.folder.path,
                    "--port", String(port), "--sweep", "0.5",
                ], port: port, log: setup.folder.path + ".svc.log")
            do {
                try await service.start()
            } catch {
                Issue.record("\(service.logText)")
                throw error
            }
            defer { service.stopInBackground() }
            let home = setup.annHome
            #expect(
                try await WorkerTool.run(home, ["login", "--server", service.url, "--token", setup.annToken]).status == 0,
                "\(service.logText)")
            #expect(try await WorkerTool.run(home, ["checkin", "--lat", "1", "--lon", "2"]).status == 0)
            #expect(try await WorkerTool.run(home, ["complete", String(setup.annTask), "--note", "least privilege"]).status == 0)
            #expect(try await WorkerTool.run(home, ["sync"]).status == 0)
            var task = try await CentralStore.withStore(setup.url) { try await $0.task(id: setup.annTask) }
            _ = try await eventually(within: .seconds(20), every: .milliseconds(200)) {
                task = try await CentralStore.withStore(setup.url) { try await $0.task(id: setup.annTask) }
                return task.status == .completed
            }
            #expect(task.status == .completed && task.completionNote == "least privilege", "\(service.logText)")
            #expect(!service.logText.contains("permission denied"), "\(service.logText)")
            #expect(try await service.stop() == 0)
            try await CentralStore.withStore(setup.url) { store in
                _ = try await store.rows(PostgresQuery(unsafeSQL: "DROP OWNED BY \(role)"))
                _ = try await store.rows(PostgresQuery(unsafeSQL: "DROP ROLE \(role)"))
            }
        }
    }
}
