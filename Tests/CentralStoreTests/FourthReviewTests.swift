import Crypto
import Foundation
import PostgresNIO
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// The fourth review's holes in the master (sql/0030): what signs stays secret, an old link never
/// answers for a new booking, and what a customer was told is removed only by a function that says so.
@Suite("Secrets, bookings and erasure")
struct FourthReviewTests {
    /// A manager's own SQL login, as in the review, next to the owner's store.
    static func withManagerLogin(_ body: (DatabaseURL, CentralStore, Fixtures) async throws -> Void) async throws {
        try await TestDatabase.withFresh { url in
            let role = "tw_mgr_" + UUID().uuidString.prefix(8).lowercased()
            let world = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                _ = try await store.rows(PostgresQuery(unsafeSQL: "CREATE ROLE \(role) LOGIN IN ROLE teamwork_manager"))
                _ = try await store.rows(PostgresQuery(unsafeSQL: "INSERT INTO actor_roles VALUES ('\(role)', \(world.manager.id))"))
                return world
            }
            var asManager = url
            asManager.username = role
            do {
                try await CentralStore.withStore(url) { owner in try await body(asManager, owner, world) }
            } catch {
                try? await CentralStore.withStore(url) { store in
                    _ = try await store.rows(PostgresQuery(unsafeSQL: "DELETE FROM actor_roles"))
                    _ = try await store.rows(PostgresQuery(unsafeSQL: "DROP OWNED BY \(role); DROP ROLE IF EXISTS \(role)"))
                }
                throw error
            }
            try await CentralStore.withStore(url) { store in
                _ = try await store.rows(PostgresQuery(unsafeSQL: "DELETE FROM actor_roles"))
                _ = try await store.rows(PostgresQuery(unsafeSQL: "DROP OWNED BY \(role)"))
                _ = try await store.rows(PostgresQuery(unsafeSQL: "DROP ROLE IF EXISTS \(role)"))
            }
        }
    }

    static func refused(_ url: DatabaseURL, _ statement: String) async -> Bool {
        do {
            try await CentralStore.withStore(url) { _ = try await $0.rows(PostgresQuery(unsafeSQL: statement)) }
            return false
        } catch {
            return true
        }
    }

    static func fingerprint(_ secret: String) -> String {
        String(SHA256.hash(data: Data(secret.utf8)).map { String(format: "%02x", $0) }.joined().prefix(16))
    }

    /// Seen on main: a manager's login selected `secret` and signed an event billing accepted.
    @Test func aManagersSQLLoginSeesAWebhooksFingerprintNeverItsSecret() async throws {
        try await Self.withManagerLogin { asManager, _, _ in
            let (made, secret) = try await CentralStore.withStore(asManager) { store in
                try await store.addWebhook(url: "https://billing.example.com/hooks", events: [.taskCompleted], description: "billing")
            }
            #expect(secret.hasPrefix("whsec_") && Data(base64Encoded: String(secret.dropFirst(6)))?.count == 32)
            #expect(made.secretFingerprint == Self.fingerprint(secret))
            for statement in [
                "SELECT secret FROM webhook_subscriptions", "SELECT previous_secret FROM webhook_subscriptions",
                "SELECT * FROM webhook_subscriptions", "SELECT id FROM webhook_subscriptions WHERE secret LIKE 'whsec_A%'",
                "UPDATE webhook_subscriptions SET secret = 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'",
                "INSERT INTO webhook_subscriptions (url, events, secret) VALUES ('https://x.example', '{task.created}', 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')",
            ] {
                #expect(await Self.refused(asManager, statement), "a manager's login may not: \(statement)")
            }
            let rotated = try await CentralStore.withStore(asManager) { try await $0.rotateWebhookSecret(id: made.id) }
            let listed = try await CentralStore.withStore(asManager) { try await $0.webhooks() }
            #expect(rotated != secret && listed.map(\.secretFingerprint) == [Self.fingerprint(rotated)])
        }
    }

    /// Seen on main: a manager deleted a customer's messages, and so what the customer was told.
    @Test func aManagerCannotDeleteWhatACustomerWasToldAndAnErasureRecordsWhatItRemoved() async throws {
        try await Self.withManagerLogin { asManager, owner, world in
            let customer = try await owner.addCustomer(try NewCustomer(name: "Åsa", email: "asa@example.se", consent: true))
            try await owner.setSiteCustomer(locationID: world.site.id, customerID: customer.id)
            let start = Date().addingTimeInterval(3 * 86_400)
            _ = try await owner.createTask(
                try NewTask(
                    title: "Meter", assignment: try Assignment(teamID: world.red.id, assigneeID: nil), locationID: world.site.id,
                    window: try TimeWindow(start: start, end: start.addingTimeInterval(7200))))
            _ = try await owner.rows("SELECT teamwork_issue_appointment_link(t.id, 0) FROM tasks t")
            for statement in [
                "DELETE FROM customer_messages", "DELETE FROM appointments", "DELETE FROM appointment_links", "DELETE FROM customers",
            ] {
                #expect(await Self.refused(asManager, statement), "a manager's login may not: \(statement)")
            }
            let erased = try await CentralStore.withStore(asManager) { try await $0.eraseCustomer(id: customer.id) }
            #expect(erased.erasedAt != nil && erased.email == nil)
            let record = try await owner.rows(
                "SELECT messages, appointments, links, erased_by FROM customer_erasures WHERE customer_id = \(customer.id)")
            #expect(record.count == 1)
            let (messages, appointments, links, by) = try record[0].decode((Int32, Int32, Int32, Int64?).self)
            #expect(messages >= 1 && appointments == 1 && links == 1 && by == world.manager.id, "\(messages) \(appointments) \(links)")
            #expect(try await owner.rows("SELECT 1 FROM appointment_links").isEmpty)
        }
    }

    /// Seen on main: when a task's booking was made anew (its appointment row deleted, as a manager's
    /// DELETE or a customer's cascade did), the sequence began again at 0 and the former customer's
    /// link showed the new customer's visit and cancelled it.
    @Test func anOldLinkNeverAnswersForANewBookingOfTheSameTask() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let first = try await store.addCustomer(try NewCustomer(name: "First", email: "first@example.org", consent: true))
            let second = try await store.addCustomer(try NewCustomer(name: "Second", email: "second@example.org", consent: true))
            try await store.setSiteCustomer(locationID: world.site.id, customerID: first.id)
            let start = Date().addingTimeInterval(3 * 86_400)
            let task = try await store.createTask(
                try NewTask(
                    title: "Meter", assignment: try Assignment(teamID: world.red.id, assigneeID: nil), locationID: world.site.id,
                    window: try TimeWindow(start: start, end: start.addingTimeInterval(7200))))
            let old = try await store.rows("SELECT teamwork_issue_appointment_link(\(task.id), 0)")[0].decode(String.self)
            // The booking is made anew (as the owner still can, or a cascade does), for the second customer.
            _ = try await store.rows("DELETE FROM appointments WHERE task_id = \(task.id)")
            try await store.setSiteCustomer(locationID: world.site.id, customerID: second.id)
            let booking = try await store.rows("SELECT customer_id, sequence FROM appointments WHERE task_id = \(task.id)")
            #expect(try booking.map { try $0.decode((Int64, Int32).self) }.map { "\($0.0)/\($0.1)" } == ["\(second.id)/0"])
            #expect(try await store.rows("SELECT * FROM teamwork_appointment_link(\(old))").isEmpty, "the old link opens nothing")
            let answer = try await store.rows("SELECT teamwork_appointment_answer(\(old), 'cancel', NULL, NULL)")[0].decode(String.self)
            #expect(answer == "unknown")
            let now = try await store.rows("SELECT answer FROM appointments WHERE task_id = \(task.id)")[0].decode(String.self)
            #expect(now == "none", "the second customer's visit stands")
            // The new booking's own link answers.
            let fresh = try await store.rows("SELECT teamwork_issue_appointment_link(\(task.id), 0)")[0].decode(String.self)
            #expect(
                try await store.rows("SELECT teamwork_appointment_answer(\(fresh), 'confirmed', NULL, NULL)")[0].decode(String.self)
                    == "done")
        }
    }

    /// Seen on main: a test booking a visit "tomorrow" got a reminder or not by the hour it ran at.
    /// Reminders are due by the clock the service passes, at any hour and across DST changes (the
    /// day before on the site's clock, from 09:00): (the clock's day and time in Stockholm, whether due).
    @Test(arguments: [
        ("2027-02-10", "00:05", false), ("2027-02-10", "08:59", false), ("2027-02-10", "12:00", true), ("2027-02-10", "23:55", true),
        // Spring forward (2027-03-28, 02:00 → 03:00): the day before it, and the day itself.
        ("2027-03-27", "09:00", true), ("2027-03-28", "08:30", false), ("2027-03-28", "23:55", true),
        // Fall back (2027-10-31, 03:00 → 02:00).
        ("2027-10-30", "23:55", true), ("2027-10-31", "00:05", false), ("2027-10-31", "12:00", true),
    ])
    func remindersAreDueByTheServicesClockAtAnyHourAndAcrossDSTChanges(day: String, time: String, due: Bool) async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let zone = try Zone("Europe/Stockholm")
            _ = try await store.rows("UPDATE teams SET time_zone = 'Europe/Stockholm'")
            let customer = try await store.addCustomer(try NewCustomer(name: "Ola", email: "ola@example.org", consent: true))
            let clockDay = try LocalDate(parsing: day)
            let visit = zone.instant(clockDay.adding(days: 1), LocalTime(hour: 10, minute: 0)!)
            // Tomorrow's visit, and one the day after (never due on this clock).
            for start in [visit, visit.addingTimeInterval(86_400)] {
                _ = try await store.createTask(
                    try NewTask(
                        title: "Visit", assignment: try Assignment(teamID: world.red.id, assigneeID: nil),
                        window: try TimeWindow(start: start, end: start.addingTimeInterval(3600)), customerID: customer.id))
            }
            let now = zone.instant(clockDay, try LocalTime(parsing: time))
            let queued = try await store.queueReminders(from: LocalTime(hour: 9, minute: 0)!, now: now)
            #expect(queued == (due ? 1 : 0), "\(day) \(time)")
            // Once only, however often the service asks.
            #expect(try await store.queueReminders(from: LocalTime(hour: 9, minute: 0)!, now: now) == 0)
        }
    }

    /// Seen on main: any SQL session set `teamwork.planned` (or `teamwork.forced`) and wrote a fake
    /// "planned" entry into a task's history, or skipped the skills rule. Marks now come only from
    /// teamwork_mark, which checks what it is told.
    @Test func aSessionSettingNeitherWritesPlannedIntoHistoryNorSkipsTheSkillsRule() async throws {
        try await Self.withManagerLogin { asManager, owner, world in
            let task = try await owner.createTask(try world.task("meter", team: world.red, assignee: nil))
            try await CentralStore.withStore(asManager) { store in
                try await store.transaction { connection in
                    try await connection.query("SELECT set_config('teamwork.planned', 'day plan 2026-12-01', true)", logger: store.logger)
                    try await connection.query("SELECT set_config('teamwork.forced', 'because', true)", logger: store.logger)
                    try await connection.query("UPDATE tasks SET priority = 'high' WHERE id = \(task.id)", logger: store.logger)
                }
            }
            let entries = try await owner.history(taskID: task.id)
            #expect(entries.count >= 2)
            #expect(entries.allSatisfy { $0.changes["planned"] == nil && $0.changes["forced"] == nil }, "\(entries.map(\.changes))")
            for statement in [
                "SELECT teamwork_mark('planned', 'the boss said so')", "SELECT teamwork_mark('owner', 'x')",
                "INSERT INTO transaction_marks VALUES (txid_current(), 'planned', 'day plan 2026-12-01')",
            ] {
                #expect(await Self.refused(asManager, statement), "a manager's login may not: \(statement)")
            }
            // The rule a setting used to skip: a task needing a skill goes to no one without it.
            _ = try await owner.rows("UPDATE tasks SET required_skills = '{electrical}' WHERE id = \(task.id)")
            await #expect(throws: (any Error).self) {
                try await CentralStore.withStore(asManager) { store in
                    try await store.transaction { connection in
                        try await connection.query("SELECT set_config('teamwork.forced', 'because', true)", logger: store.logger)
                        try await connection.query(
                            "UPDATE tasks SET assignee_id = \(world.ann.id) WHERE id = \(task.id)", logger: store.logger)
                    }
                }
            }
        }
    }
}
