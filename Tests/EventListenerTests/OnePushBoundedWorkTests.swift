import Foundation
import PostgresNIO
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// Issue 64's second hole (seen failing on a28f529: one push of 1,000 time changes on a completed
/// task queued 1,001 `task.costed` deliveries per subscriber and 1,005 history rows, and billing's
/// backlog held a later `task.created` back for half a minute). The work one push causes is
/// bounded by the entries it sets, and events that supersede each other merge.
@Suite("Field work: one push causes bounded work")
struct OnePushBoundedWorkTests {
    static let day = "2026-10-27"
    static func at(_ time: String) -> Date { TimeOnJobTests.at(day, time) }

    static func count(_ world: TimeOnJobTests.World, _ query: PostgresQuery) async throws -> Int {
        try await world.sql(query).first!.decode(Int.self)
    }

    @Test func aThousandTimeChangesOnACompletedTaskQueueOneCostedDeliveryPerSubscriberAndFewHistoryRows() async throws {
        try await TimeOnJobTests.withWorld { world in
            let ann = world.fixtures.ann
            let task = try await world.task("Meter", for: ann, day: Self.day, from: "08:00", to: "10:00")
            _ = try await world.apply(ann, [("start", task, Self.at("08:00"), nil, nil), ("complete", task, Self.at("09:00"), nil, nil)])
            for url in ["https://billing.example/h", "https://payroll.example/h"] {
                _ = try await world.sql(
                    "INSERT INTO webhook_subscriptions (url, events, secret) VALUES (\(url), ARRAY['task.costed', 'task.created'], \("whsec_" + String(repeating: "A", count: 44)))"
                )
            }
            let historyBefore = try await Self.count(world, "SELECT count(*)::int FROM task_history WHERE task_id = \(task)")
            // One push: a thousand entries of her work, each a minute longer than the one before.
            let flood = (1...1_000).map { minute in
                (
                    "time", task, Self.at("12:00").addingTimeInterval(Double(minute)), Optional("work"),
                    Optional(TimeOnJob.value(start: Self.at("08:00"), end: Self.at("08:00").addingTimeInterval(Double(minute) * 60)))
                )
            }
            let outcomes = try await world.apply(ann, flood)
            #expect(outcomes.allSatisfy { $0 == nil }, "no change is a conflict: the last sets the entry, the others it supersedes")
            #expect(try await world.store.timeEntries(ofTask: task).first?.minutes == 1_000, "the last entry is the one that stands")
            let pending = try await Self.count(
                world,
                """
                SELECT count(*)::int FROM webhook_deliveries d JOIN outbox_events e ON e.id = d.event_id
                WHERE e.event = 'task.costed' AND d.state = 'pending'
                """)
            #expect(pending == 2, "one per subscriber, the newest")
            #expect(try await Self.count(world, "SELECT count(*)::int FROM outbox_events WHERE event = 'task.costed'") == 1)
            let history = try await Self.count(world, "SELECT count(*)::int FROM task_history WHERE task_id = \(task)") - historyBefore
            #expect(history <= 2, "\(history) history rows")
            #expect(
                try await Self.count(world, "SELECT count(*)::int FROM field_changes WHERE task_id = \(task) AND operation = 'time'")
                    == 1_000)

            // Three more corrections, each in a push of its own: still one delivery waiting per subscriber, carrying the newest.
            for (index, end) in ["09:10", "09:20", "09:30"].enumerated() {
                let value = TimeOnJob.value(start: Self.at("08:00"), end: Self.at(end))
                #expect(
                    try await world.apply(ann, [("time", task, Self.at("13:00").addingTimeInterval(Double(index)), "work", value)]) == [nil]
                )
            }
            let waiting = try await world.sql(
                """
                SELECT e.payload::text FROM webhook_deliveries d JOIN outbox_events e ON e.id = d.event_id
                WHERE e.event = 'task.costed' AND d.state = 'pending'
                """
            ).map { try $0.decode(String.self) }
            #expect(waiting.count == 2 && waiting.allSatisfy { $0.contains("\"minutes\": 90") }, "\(waiting)")
            #expect(
                try await Self.count(world, "SELECT count(*)::int FROM outbox_events WHERE event = 'task.costed'") == 1,
                "an event merged away goes with its deliveries")

            // A new task after the flood is the next thing each subscriber hears, not the thousand-and-first.
            _ = try await world.task("Urgent", for: ann, day: Self.day, from: "14:00", to: "15:00")
            var heard: [Int64: [String]] = [:]
            for _ in 0..<2 {
                for due in try await world.store.claimDueDeliveries(limit: 10, lease: .seconds(60)) {
                    heard[due.subscriptionID, default: []].append(due.payload.contains("task.created") ? "created" : "costed")
                    try await world.store.recordAttempt(
                        deliveryID: due.id, status: 200, error: nil, delivered: true, retryIn: nil, pauseAfter: 10)
                }
            }
            #expect(heard.values.map { $0 } == [["costed", "created"], ["costed", "created"]], "\(heard)")
        }
    }

    @Test func aCostedDeliveryAlreadyTriedOrHeldIsNotReplacedButFollowed() async throws {
        try await TimeOnJobTests.withWorld { world in
            let ann = world.fixtures.ann
            let task = try await world.task("Pump", for: ann, day: Self.day, from: "08:00", to: "10:00")
            _ = try await world.sql(
                "INSERT INTO webhook_subscriptions (url, events, secret) VALUES ('https://billing.example/h', ARRAY['task.costed'], \("whsec_" + String(repeating: "A", count: 44)))"
            )
            _ = try await world.apply(ann, [("start", task, Self.at("08:00"), nil, nil), ("complete", task, Self.at("09:00"), nil, nil)])
            // The sender holds the completion's costs (mid-send) when a correction comes.
            let held = try await world.store.claimDueDeliveries(limit: 10, lease: .seconds(60))
            #expect(held.count == 1)
            let value = TimeOnJob.value(start: Self.at("08:00"), end: Self.at("09:15"))
            #expect(try await world.apply(ann, [("time", task, Self.at("12:00"), "work", value)]) == [nil])
            #expect(
                try await Self.count(
                    world,
                    "SELECT count(*)::int FROM webhook_deliveries d JOIN outbox_events e ON e.id = d.event_id WHERE e.event = 'task.costed' AND d.state = 'pending'"
                ) == 2, "the one in flight stays; the newest follows it")
        }
    }
}
