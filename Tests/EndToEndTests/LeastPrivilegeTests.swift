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
            // A customer for Ann's task: the service sends their messages and serves their page with its role only.
            let link = try await CentralStore.withStore(setup.url) { store -> String? in
                let customer = try await store.addCustomer(try NewCustomer(name: "Ola", email: "ola@example.org", consent: true))
                let start = Date().addingTimeInterval(86_400 * 2)
                _ = try await store.updateTask(
                    id: setup.annTask,
                    try TaskChanges(
                        window: .some(try TimeWindow(start: start, end: start.addingTimeInterval(3600))), customerID: .some(customer.id)))
                return try await store.issueAppointmentLink(taskID: setup.annTask, sequence: 0)
            }
            let catcher = try CustomerMessagesEndToEndTests.Catcher(in: setup.folder.deletingLastPathComponent())
            defer { catcher.stop() }
            try await catcher.waitUntilListening()
            let port = ServiceProcess.freePort()
            let service = ServiceProcess(
                [
                    "run", "--database-url", asService.connectionString, "--replicas", setup.folder.path,
                    "--port", String(port), "--sweep", "0.5",
                    "--smtp-url", "smtp://127.0.0.1:\(catcher.port)?from=visits@example.com&starttls=never",
                ], port: port, log: setup.folder.path + ".svc.log")
            do {
                try await service.start()
            } catch {
                Issue.record("\(service.logText)")
                throw error
            }
            defer { service.stopInBackground() }
            // The customer's page, with the crew's free times, read through the service's role.
            let page = try await LocalHTTP.request(port: port, "/appointment/\(try #require(link))")
            #expect(page.status == 200 && page.text.contains("Confirm the visit"), "\(page.status) \(page.text)\n\(service.logText)")
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
            // The booking and the done message went.
            #expect(
                try await eventually(within: .seconds(20)) { try await catcher.mails().count == 2 },
                "\(catcher.shown())\n\(service.logText)")

            #expect(!service.logText.contains("permission denied"), "\(service.logText)")
            #expect(try await service.stop() == 0)
            try await CentralStore.withStore(setup.url) { store in
                _ = try await store.rows(PostgresQuery(unsafeSQL: "DROP OWNED BY \(role)"))
                _ = try await store.rows(PostgresQuery(unsafeSQL: "DROP ROLE \(role)"))
            }
        }
    }
}
