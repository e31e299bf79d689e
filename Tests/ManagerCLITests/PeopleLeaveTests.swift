import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

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
            _ = try await store.rows(
                """
                UPDATE tasks SET status = 'completed', started_at = now(), completed_at = now(), completed_by = \(f.bo.id),
                       completion_note = 'done' WHERE id = \(done.id) RETURNING id
                """)
            let pending = try await store.createTask(try f.task("still bo's", team: f.red, assignee: f.bo))
            let floating = try await store.createTask(try f.task("anyone", team: f.red))
            let token = try await world.token(for: f.bo, store)
            let server = ServiceProcess.serve(databaseURL: world.url.connectionString, replicas: world.replicas)
            try await server.start()
            defer { server.stopInBackground() }
            let port = server.port ?? 0
            func listing() async throws -> Int {
                try await LocalHTTP.request(port: port, "/v1/replicas", headers: ["Authorization": "Bearer \(token)"]).status
            }
            #expect(try await listing() == 200, "Bo signs in while he works here")

            let removed = try await manager("person", "remove", "bo@example.org")
            #expect(removed.status == 68 && removed.stderr.contains("person deactivate"), "\(removed.stderr)")
            let refused = try await manager("person", "deactivate", "bo@example.org")
            #expect(refused.status == 68 && refused.stderr.contains("1 unfinished task: \(pending.id)"), "\(refused.stderr)")
            #expect(try await manager("task", "assign", String(pending.id), "--team", "red", "--assignee", "ann@example.org").status == 0)

            let left = try await manager("person", "deactivate", "bo@example.org")
            #expect(left.status == 0 && left.stdout.contains("1 token revoked"), "\(left.stderr)")
            try await expectEventually("Bo's token refused at once", within: .seconds(5), every: .milliseconds(20)) {
                try await listing() == 401
            }
            let assign = try await manager("task", "assign", String(floating.id), "--team", "red", "--assignee", "bo@example.org")
            #expect(assign.status == 68 && assign.stderr.contains("bo Test is no longer active"), "\(assign.stderr)")
            let suggested = try JSONOutput.decode(Ranking.self, try await manager("suggest", String(floating.id), "--json").stdout)
            #expect(!suggested.candidates.contains { $0.personID == f.bo.id }, "nobody's candidate")
            #expect(
                try await manager("person", "list").stdout.split(separator: "\n").contains {
                    $0.contains("bo Test") && $0.contains("inactive since")
                })
            #expect(try await manager("task", "show", String(done.id)).stdout.contains("bo Test"), "history keeps the name")

            let back = try await manager("person", "reactivate", "bo@example.org")
            #expect(back.status == 0, "\(back.stderr)")
            #expect(try await manager("task", "assign", String(floating.id), "--team", "red", "--assignee", "bo@example.org").status == 0)
            #expect(try await listing() == 401, "old tokens stay revoked")
        }
    }

    /// Work claimed offline before someone left reaches the master after they left: the claim is
    /// refused (the task stays free for the team, not with someone who will never do it), while
    /// a completion they made is kept (the work was done). Seen before: the listener gave the task
    /// to the deactivated worker, past the trigger that refuses a manager the same.
    @Test func aClaimMadeOfflineBeforeLeavingLeavesTheTaskFreeButACompletionIsKept() async throws {
        try await TestWorld.with("leave-claim") { world, store in
            let f = world.fixtures
            let claimed = try await store.createTask(try f.task("claimed offline", team: f.red))
            let done = try await store.createTask(try f.task("claimed and done offline", team: f.red))
            _ = try await store.deactivatePerson(id: f.bo.id)
            let made = Int64((Date().timeIntervalSince1970 - 3_600) * 1000)
            func change(_ position: Int64, _ task: Int64, _ operation: String) -> RecordedWorkerChange {
                RecordedWorkerChange(
                    position: position, changeID: "leave-\(position)", personID: f.bo.id, taskID: task,
                    operation: operation, note: operation == "complete" ? "fixed" : nil,
                    madeAt: made + position, receivedAt: made + position + 1_000)
            }
            let changes = [change(1, claimed.id, "claim"), change(2, done.id, "claim"), change(3, done.id, "complete")]
            let outcome = try await store.applyFieldChanges(
                replica: "team-\(f.red.id)", source: "leave-test", changes,
                cursor: ListenerCursor(position: 3, changeID: "leave-3"))
            let verdicts = Dictionary(uniqueKeysWithValues: outcome.map { ($0.changeID, ($0.applied, $0.conflict)) })
            #expect(verdicts["leave-1"]?.0 == false && verdicts["leave-1"]?.1 == "not_a_member", "\(outcome)")
            #expect(verdicts["leave-3"]?.0 == true, "the completion is kept: \(outcome)")
            let after = try await store.rows(
                "SELECT id, assignee_id, status, completed_by FROM tasks WHERE id IN (\(claimed.id), \(done.id)) ORDER BY id"
            )
            .map { try $0.decode((Int64, Int64?, String, Int64?).self) }
            #expect(after[0].1 == nil && after[0].2 == "open", "the claimed task stays free: \(after)")
            #expect(after[1].1 == nil && after[1].2 == "completed" && after[1].3 == f.bo.id, "done by Bo, given to nobody: \(after)")
        }
    }
}
