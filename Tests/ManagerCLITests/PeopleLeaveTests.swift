@testable import CentralStore
import Foundation
import Testing
import TeamworkModel
import TeamworkTestSupport

/// People leave: someone who has worked here is deactivated, not removed
/// (seen before: `person remove` refused for good once they had completed
/// anything, and a completed task cannot be reassigned).
@Suite("teamwork-manager: people leave")
struct PeopleLeaveTests {
    @Test func aWorkerWhoLeavesLosesAccessAtOnceGetsNoMoreWorkAndKeepsTheirHistory() async throws {
        try await TestWorld.with("leave") { world, store in
            let f = world.fixtures
            let manager = ManagerTool(world.url)
            let done = try await store.createTask(try f.task("done by bo", team: f.red, assignee: f.bo))
            // Completed in the field (as the listener writes it).
            _ = try await store.rows("""
                UPDATE tasks SET status = 'completed', started_at = now(), completed_at = now(), completed_by = \(f.bo.id),
                       completion_note = 'done' WHERE id = \(done.id) RETURNING id
                """)
            let pending = try await store.createTask(try f.task("still bo's", team: f.red, assignee: f.bo))
            let floating = try await store.createTask(try f.task("anyone", team: f.red))
            let token = try await world.token(for: f.bo, store)
            let server = ServiceProcess.serve(databaseURL: world.url.connectionString, replicas: world.replicas)
            try await server.start()
            defer { _ = try? server.stop() }
            let port = server.port ?? 0
            func listing() async throws -> Int {
                try await LocalHTTP.request(port: port, "/v1/replicas", headers: ["Authorization": "Bearer \(token)"]).status
            }
            #expect(try await listing() == 200, "Bo signs in while he works here")

            let removed = try manager("person", "remove", "bo@example.org")
            #expect(removed.status == 68 && removed.stderr.contains("person deactivate"), "\(removed.stderr)")
            let refused = try manager("person", "deactivate", "bo@example.org")
            #expect(refused.status == 68 && refused.stderr.contains("1 unfinished task(s): \(pending.id)"), "\(refused.stderr)")
            #expect(try manager("task", "assign", String(pending.id), "--team", "red", "--assignee", "ann@example.org").status == 0)

            let left = try manager("person", "deactivate", "bo@example.org")
            #expect(left.status == 0 && left.stdout.contains("1 token(s) revoked"), "\(left.stderr)")
            try await expectEventually("Bo's token refused at once", within: .seconds(5), every: .milliseconds(20)) {
                try await listing() == 401
            }
            let assign = try manager("task", "assign", String(floating.id), "--team", "red", "--assignee", "bo@example.org")
            #expect(assign.status == 68 && assign.stderr.contains("bo Test is no longer active"), "\(assign.stderr)")
            let suggested = try JSONOutput.decode(Ranking.self, try manager("suggest", String(floating.id), "--json").stdout)
            #expect(!suggested.candidates.contains { $0.personID == f.bo.id }, "nobody's candidate")
            #expect(try manager("person", "list").stdout.split(separator: "\n").contains { $0.contains("bo Test") && $0.contains("inactive since") })
            #expect(try manager("task", "show", String(done.id)).stdout.contains("bo Test"), "history keeps the name")

            let back = try manager("person", "reactivate", "bo@example.org")
            #expect(back.status == 0, "\(back.stderr)")
            #expect(try manager("task", "assign", String(floating.id), "--team", "red", "--assignee", "bo@example.org").status == 0)
            #expect(try await listing() == 401, "old tokens stay revoked")
        }
    }
}
