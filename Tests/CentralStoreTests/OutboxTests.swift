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
            #expect(secret.hasPrefix("whsec_") && Data(base64Encoded: String(secret.dropFirst(6)))?.count == 32)
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

    /// Seen on main: `task.completed` carried only ids, so billing had to ask back for everything.
    /// It now says who did the work, the site and its address, the customer (no contact details),
    /// when work started and ended, the minutes on site between, and the checklist with its answers.
    @Test func aCompletionEventSaysWhatBillingNeedsWithoutAskingBack() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let (hook, _) = try await store.addWebhook(url: "https://billing.example/in", events: [.taskCompleted], description: "")
            _ = try await store.publishChecklist(
                name: "visit", items: [ChecklistItem(key: "done", kind: .check, label: "Done", required: true)], existing: false)
            let asa = try await store.addCustomer(try NewCustomer(name: "Åsa Öberg", email: "asa@example.se", consent: true))
            try await store.connection.query(
                "UPDATE locations SET customer_id = \(asa.id), street = 'Storgatan 1', city = 'Stockholm' WHERE id = \(world.site.id)",
                logger: store.logger)
            var new = try world.task("checked", team: world.red, assignee: world.ann)
            new.checklist = "visit"
            let task = try await store.createTask(new)
            try await store.connection.query(
                """
                UPDATE tasks SET status = 'completed', started_at = '2026-12-01T08:00:00Z', completed_at = '2026-12-01T09:29:40Z',
                       completed_by = assignee_id, completion_note = 'Meter swapped',
                       answers = \("{\"done\": {\"value\": \"yes\", \"by\": \(world.ann.id), \"at\": 0}}")::jsonb
                WHERE id = \(task.id)
                """, logger: store.logger)
            let payload = try #require(
                try await store.rows(
                    """
                    SELECT e.payload::text FROM webhook_deliveries d JOIN outbox_events e ON e.id = d.event_id
                    WHERE d.subscription_id = \(hook.id)
                    """
                ).first?.decode(String.self))
            let data = try #require(
                (try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])?["data"] as? [String: Any])
            #expect((data["worker"] as? [String: Any])?["name"] as? String == "ann Test", "\(payload)")
            let site = try #require(data["site"] as? [String: Any])
            #expect(site["name"] as? String == "Depot" && site["address"] as? String == "Storgatan 1, Stockholm", "\(site)")
            #expect((data["customer"] as? [String: Any])?["name"] as? String == "Åsa Öberg")
            #expect(!payload.contains("asa@example.se"), "no contact details")
            #expect(data["minutes_on_site"] as? Int == 90 && data["started_at"] != nil)
            let checklist = try #require(data["checklist"] as? [String: Any])
            #expect(checklist["name"] as? String == "visit" && checklist["items"] as? Int == 1 && checklist["answered"] as? Int == 1)
            #expect(data["completion_note"] as? String == "Meter swapped")
        }
    }

    /// Seen on main: twelve booking emails went out the moment the service started after a CSV
    /// import, with no way to prepare the day first. A held day's messages wait, saying so, until
    /// the dispatcher releases it; an import can hold its own days.
    @Test func aHeldDaysMessagesWaitUntilReleasedAndAnImportCanHoldItsOwn() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let asa = try await store.addCustomer(try NewCustomer(name: "Åsa", email: "asa@example.se", consent: true))
            let day = LocalDate(year: 2030, month: 6, day: 3)!
            func visit(_ title: String, on day: LocalDate, team: Team) async throws -> FieldTask {
                var new = try world.task(title, team: team)
                let start = Zone.utc.instant(day, LocalTime(hour: 10, minute: 0)!)
                new.window = try TimeWindow(start: start, end: start.addingTimeInterval(3600))
                new.customerID = asa.id
                return try await store.createTask(new)
            }
            func states(_ task: FieldTask) async throws -> [CustomerMessage.State] {
                try await store.customerMessages(taskID: task.id).map(\.state)
            }
            let before = try await visit("queued before the hold", on: day, team: world.red)
            try await store.holdMessages(day: day, teamID: world.red.id, note: "preparing")
            let during = try await visit("booked while held", on: day, team: world.red)
            let otherTeam = try await visit("blue's", on: day, team: world.blue)
            let otherDay = try await visit("the next day", on: day.adding(days: 1), team: world.red)
            let (beforeStates, duringStates) = (try await states(before), try await states(during))
            #expect(beforeStates == [.held] && duringStates == [.held], "both wait")
            #expect(
                try await store.customerMessages(taskID: during.id).first?.reason == "held for 2030-06-03: the dispatcher releases the day")
            let (otherTeamStates, otherDayStates) = (try await states(otherTeam), try await states(otherDay))
            #expect(otherTeamStates == [.pending] && otherDayStates == [.pending], "another team's, another day's go")
            #expect(
                try await store.claimDueMessages(limit: 10, lease: .seconds(30), channels: [.email]).allSatisfy {
                    ![before.id, during.id].contains($0.message.taskID)
                })
            #expect(try await store.messageHolds().map(\.held) == [2])
            #expect(try await store.releaseMessages(day: day, teamID: world.red.id) == 2)
            #expect(try await states(during) == [.pending])
            await #expect(throws: TeamworkError.self) { try await store.releaseMessages(day: day, teamID: world.red.id) }

            // An import that holds its messages holds each day and team it touches, and nothing else.
            let csv =
                "title,team,window,customer\nMeter A,red,2030-07-01T09:00Z/PT1H,asa@example.se\nMeter B,blue,2030-07-02T09:00Z/PT1H,asa@example.se\n"
            let imported = try await store.importTasks(csv: csv, holdMessages: true)
            for task in imported { #expect(try await states(task) == [.held], "\(task.title)") }
            #expect(
                Set(try await store.messageHolds().map { "\($0.day) \($0.teamID ?? 0)" }) == [
                    "2030-07-01 \(world.red.id)", "2030-07-02 \(world.blue.id)",
                ])
            let plain = try await store.importTasks(csv: "title,team,window,customer\nMeter C,red,2030-08-01T09:00Z/PT1H,asa@example.se\n")
            #expect(try await states(plain[0]) == [.pending], "an import that does not hold sends")
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

    @Test func attachmentsChecklistsAndCustomersAnswersAreEventsOnlyForTheirSubscribers() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let (hook, _) = try await store.addWebhook(
                url: "https://warehouse.example/in",
                events: [.attachmentAdded, .checklistCompleted, .appointmentConfirmed, .appointmentMoved], description: "")
            _ = try await store.publishChecklist(
                name: "visit", items: [ChecklistItem(key: "done", kind: .check, label: "Done", required: true)], existing: false)
            var new = try world.task("checked", team: world.red, assignee: world.ann)
            new.checklist = "visit"
            let checked = try await store.createTask(new)
            let plain = try await store.createTask(try world.task("plain", team: world.red, assignee: world.ann))
            // A signature from the field, as the sync endpoint records it.
            try await store.connection.query(
                """
                INSERT INTO attachments (task_id, person_id, change_id, item, sha256, size, media_type, signer, captured_at, received_at)
                VALUES (\(checked.id), \(world.ann.id), 'c-1', NULL, \(String(repeating: "a", count: 64)), 1234, 'image/png',
                        'Åsa Öberg', now(), now())
                """, logger: store.logger)
            let answered = "{\"done\": {\"value\": \"yes\", \"by\": \(world.ann.id), \"at\": 0}}"
            for task in [checked, plain] {
                try await store.connection.query(
                    """
                    UPDATE tasks SET status = 'completed', completed_at = now(), completed_by = assignee_id,
                           answers = CASE WHEN checklist_id IS NULL THEN answers
                                          ELSE \(answered)::jsonb END
                    WHERE id = \(task.id)
                    """, logger: store.logger)
            }
            let events = try await store.rows(
                """
                SELECT e.event, e.task_id, e.payload::text FROM webhook_deliveries d JOIN outbox_events e ON e.id = d.event_id
                WHERE d.subscription_id = \(hook.id) ORDER BY e.id
                """
            ).map { try $0.decode((String, Int64?, String).self) }
            #expect(events.map(\.0) == ["attachment.added", "checklist.completed"], "not the plain task's completion: \(events)")
            #expect(
                events[0].1 == checked.id && events[0].2.contains("\"signer\": \"Åsa Öberg\"") && events[0].2.contains("\"size\": 1234"))
            #expect(events[1].2.contains("\"answers\": {\"done\"") && events[1].2.contains("\"type\": \"checklist.completed\""))

            // The customer's answers: confirmed, and (after a change of window) asked to move.
            let asa = try await store.addCustomer(try NewCustomer(name: "Åsa", email: "asa@example.se", consent: true))
            var visit = try world.task("visit", team: world.red)
            let start = Date().addingTimeInterval(86_400 * 2)
            visit.window = try TimeWindow(start: start, end: start.addingTimeInterval(3600))
            visit.customerID = asa.id
            let booked = try await store.createTask(visit)
            let link = try #require(try await store.issueAppointmentLink(taskID: booked.id, sequence: 0))
            #expect(try await store.answerAppointment(secret: link, answer: .confirmed) == "done")
            _ = try await store.updateTask(
                id: booked.id,
                try TaskChanges(window: .some(try TimeWindow(start: start.addingTimeInterval(7200), end: start.addingTimeInterval(10_800))))
            )
            let again = try #require(try await store.issueAppointmentLink(taskID: booked.id, sequence: 1))
            let later = try TimeWindow(start: start.addingTimeInterval(86_400), end: start.addingTimeInterval(90_000))
            #expect(try await store.answerAppointment(secret: again, answer: .move, moveTo: later) == "done")
            let answers = try await store.rows(
                """
                SELECT e.event, e.payload::text FROM webhook_deliveries d JOIN outbox_events e ON e.id = d.event_id
                WHERE d.subscription_id = \(hook.id) AND e.event LIKE 'appointment.%' ORDER BY e.id
                """
            ).map { try $0.decode((String, String).self) }
            #expect(answers.map(\.0) == ["appointment.confirmed", "appointment.moved"])
            #expect(answers[1].1.contains("\"sequence\": 1") && answers[1].1.contains("\"asked_start\""))
            #expect(!answers.contains { $0.1.contains("asa@example.se") }, "no contact details in an event")

            // A customer who never agreed to messages is not told, and the board says so rather than "no answer".
            let quiet = try await store.addCustomer(try NewCustomer(name: "Quiet", email: "quiet@example.se", consent: false))
            var unannounced = try world.task("quiet visit", team: world.red)
            unannounced.window = visit.window
            unannounced.customerID = quiet.id
            let made = try await store.createTask(unannounced)
            _ = try await store.issueAppointmentLink(taskID: made.id, sequence: 0)
            let appointment = try #require(try await store.appointments(taskIDs: [made.id])[made.id])
            #expect(appointment.notTold == "no consent" && appointment.words(in: .utc) == "not told: no consent")
            #expect(try await store.appointments(taskIDs: [booked.id])[booked.id]?.notTold == nil)
        }
    }
}
