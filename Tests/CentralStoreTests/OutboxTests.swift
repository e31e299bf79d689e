import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// The outbox on the master: events written with the change that caused them (and only then),
/// one delivery per subscription that wants the event, and what a string of failures does.
@Suite("The outbox")
struct OutboxTests {
    @Test func eventsAreWrittenWithTheirChangeOnlyForSubscribersAndARolledBackChangeLeavesNone() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            _ = try await store.createTask(try world.task("before anyone listens", team: world.red, assignee: nil))
            #expect(try await store.rows("SELECT count(*) FROM outbox_events")[0].decode(Int64.self) == 0, "nobody subscribes: nothing")
            let (hook, secret) = try await store.addWebhook(url: "https://billing.example/hooks", events: [.taskCompleted], description: "")
            #expect(secret.hasPrefix("whsec_") && Data(base64Encoded: String(secret.dropFirst(6)))?.count == 24)
            let task = try await store.createTask(try world.task("heard of", team: world.red, assignee: world.ann))
            #expect(try await store.webhookDeliveries(subscriptionID: hook.id).isEmpty, "created and assigned: not asked for")
            // A completion that rolls back leaves no event behind.
            await #expect(throws: (any Error).self) {
                try await store.connection.withTransaction(logger: store.logger) { connection in
                    try await connection.query(
                        "UPDATE tasks SET status = 'completed', completed_at = now(), completed_by = assignee_id WHERE id = \(task.id)",
                        logger: store.logger)
                    try await connection.query("SELECT 1/0", logger: store.logger)
                }
            }
            #expect(try await store.webhookDeliveries(subscriptionID: hook.id).isEmpty)
            try await store.connection.query(
                "UPDATE tasks SET status = 'completed', completed_at = now(), completed_by = assignee_id WHERE id = \(task.id)",
                logger: store.logger)
            let deliveries = try await store.webhookDeliveries(subscriptionID: hook.id)
            #expect(deliveries.map(\.event) == ["task.completed"] && deliveries.first?.taskID == task.id)
        }
    }

    @Test func aDeliveryFailsForGoodWhenNoRetryIsLeftAndASubscriptionFailingOverAndOverIsPausedWithTheReason() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let (hook, _) = try await store.addWebhook(url: "https://crm.example/in", events: [.taskCreated], description: "crm")
            for title in ["one", "two"] { _ = try await store.createTask(try world.task(title, team: world.red, assignee: nil)) }
            var due = try await store.claimDueDeliveries(limit: 10, lease: .seconds(30))
            #expect(due.count == 1, "one at a time per subscription, the oldest first")
            #expect(try await store.claimDueDeliveries(limit: 10, lease: .seconds(30)).isEmpty, "held, and the next waits behind it")
            try await store.recordAttempt(deliveryID: due[0].id, status: 500, error: nil, delivered: false, retryIn: nil, pauseAfter: 2)
            #expect(try await store.webhookDeliveries(subscriptionID: hook.id, failedOnly: true).map(\.id) == [due[0].id])
            due = try await store.claimDueDeliveries(limit: 10, lease: .seconds(30))
            #expect(due.count == 1 && due[0].eventID > 1, "after a failure for good, the next goes")
            try await store.recordAttempt(
                deliveryID: due[0].id, status: nil, error: "no answer", delivered: false, retryIn: .seconds(60), pauseAfter: 2)
            let paused = try await store.webhook(id: hook.id)
            #expect(paused.pausedAt != nil && paused.pausedReason == "2 attempts in a row failed; the last: no answer")
            #expect(try await store.pendingDeliveries() == 0, "a paused subscription's deliveries wait")
            _ = try await store.pauseWebhook(id: hook.id, reason: nil)
            #expect(try await store.webhook(id: hook.id).failures == 0)
        }
    }
}
