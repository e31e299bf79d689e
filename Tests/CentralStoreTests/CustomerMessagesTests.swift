import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// Customers on the master: what each change to their work queues for them (once per event and
/// channel, in the same transaction), what is kept when nothing may go, the links' rules, and erasure.
@Suite("Customers and their messages")
struct CustomerMessagesTests {
    static func kinds(_ store: CentralStore, task: Int64) async throws -> [String] {
        try await store.customerMessages(taskID: task).map {
            "\($0.kind.rawValue)#\($0.sequence)/\($0.channel.rawValue)/\($0.state.rawValue)"
        }
    }

    static func window(hoursFromNow start: Double, length: Double = 2) throws -> TimeWindow {
        try TimeWindow(start: Date().addingTimeInterval(start * 3600), end: Date().addingTimeInterval((start + length) * 3600))
    }

    @Test func eachChangeQueuesItsMessageOnceForTheSitesCustomerAndARolledBackChangeQueuesNone() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let asa = try await store.addCustomer(
                try NewCustomer(name: "Åsa Öberg", email: "asa@example.se", phone: "+46 70 123 45 67", language: .sv, consent: true))
            try await store.setSiteCustomer(locationID: world.site.id, customerID: asa.id)
            var new = try world.task("Fix heat pump", team: world.red, assignee: world.ann)
            new.window = try Self.window(hoursFromNow: 30)
            let task = try await store.createTask(new)
            #expect(try await Self.kinds(store, task: task.id) == ["booked#0/email/pending", "booked#0/sms/pending"])
            // The same window again changes nothing; a new one is "changed" at the next sequence.
            _ = try await store.updateTask(id: task.id, try TaskChanges(title: "Fix the heat pump", window: .some(new.window)))
            #expect(try await store.customerMessages(taskID: task.id).count == 2)
            _ = try await store.updateTask(id: task.id, try TaskChanges(window: .some(try Self.window(hoursFromNow: 50))))
            #expect(try await Self.kinds(store, task: task.id).suffix(2) == ["changed#1/email/pending", "changed#1/sms/pending"])
            // A change that rolls back queues nothing.
            await #expect(throws: (any Error).self) {
                try await store.connection.withTransaction(logger: store.logger) { connection in
                    try await connection.query(
                        "UPDATE tasks SET window_start = window_start + interval '1 hour', window_end = window_end + interval '1 hour' WHERE id = \(task.id)",
                        logger: store.logger)
                    try await connection.query("SELECT 1/0", logger: store.logger)
                }
            }
            #expect(try await store.customerMessages(taskID: task.id).count == 4)
            // Deleting it while booked is refused (its customer would never hear); cancelled first, they do.
            await #expect(
                throws: TeamworkError.conflict(
                    "task \(task.id) has a visit booked with its customer: cancel it first (`task cancel \(task.id)`; they are told), then delete it"
                )
            ) { try await store.deleteTask(id: task.id) }
            _ = try await store.cancelTask(id: task.id)
            #expect(try await Self.kinds(store, task: task.id).suffix(2) == ["cancelled#2/email/pending", "cancelled#2/sms/pending"])
            #expect(try await store.appointments(taskIDs: [task.id])[task.id]?.sequence == 2)
            let booking = try await store.rows("SELECT booking FROM appointments WHERE task_id = \(task.id)").first?.decode(Int64.self)
            try await store.deleteTask(id: task.id)
            #expect(try await store.customerMessages(taskID: task.id).count == 6, "its messages are kept to be sent")
            // Its appointment went with it, on record: the booking, its sequence and answer, the customer.
            let removed = try await store.rows(
                "SELECT customer_id, booking, sequence, answer FROM appointment_removals WHERE task_id = \(task.id)"
            ).map { try $0.decode((Int64, Int64, Int32, String).self) }
            #expect(removed.count == 1 && removed.first?.0 == asa.id && removed.first?.1 == booking && removed.first?.2 == 2, "\(removed)")
        }
    }

    @Test func finishingATaskTellsItsCustomerItIsDoneAndTheNextCustomerTheWorkerIsOnTheWay() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let first = try await store.addCustomer(try NewCustomer(name: "First", email: "first@example.org", consent: true))
            let next = try await store.addCustomer(try NewCustomer(name: "Next", email: "next@example.org", consent: true))
            // "On my way" is for the same day on the task's clock: the visits are put on today's side of
            // now (later in the morning, earlier in the evening), so the test holds at any hour.
            let late = try Zone(world.red.timeZone).time(of: Date()).hour >= 12
            var one = try world.task("one", team: world.red, assignee: world.ann)
            one.window = try Self.window(hoursFromNow: late ? -3 : 0.5, length: 1)
            one.customerID = first.id
            var two = try world.task("two", team: world.red, assignee: world.ann)
            two.window = try Self.window(hoursFromNow: late ? -1 : 2, length: 1)
            two.customerID = next.id
            var bos = try world.task("Bo's", team: world.red, assignee: world.bo)
            bos.window = try Self.window(hoursFromNow: late ? -2 : 1, length: 1)
            bos.customerID = next.id
            let (a, b, c) = (try await store.createTask(one), try await store.createTask(two), try await store.createTask(bos))
            try await store.connection.query(
                "UPDATE tasks SET status = 'completed', completed_at = now(), completed_by = assignee_id WHERE id = \(a.id)",
                logger: store.logger)
            #expect(try await Self.kinds(store, task: a.id) == ["booked#0/email/pending", "done#0/email/pending"])
            let onMyWay = try await store.customerMessages(taskID: b.id).filter { $0.kind == .onMyWay }
            #expect(onMyWay.count == 1 && onMyWay.first?.afterTaskID == a.id, "Ann's next task: she is on her way")
            #expect(try await store.customerMessages(taskID: c.id).allSatisfy { $0.kind != .onMyWay }, "not Bo's")
        }
    }

    @Test func aCustomerWithoutConsentGetsNothingSentAndTheRowSaysWhy() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let quiet = try await store.addCustomer(try NewCustomer(name: "Quiet", email: "quiet@example.org"))
            var new = try world.task("quiet visit", team: world.red)
            new.window = try Self.window(hoursFromNow: 30)
            new.customerID = quiet.id
            let task = try await store.createTask(new)
            let messages = try await store.customerMessages(taskID: task.id)
            #expect(messages.map(\.state) == [.skipped] && messages.first?.reason == "the customer has not agreed to messages")
            #expect(try await store.claimDueMessages(limit: 10, lease: .seconds(30)).isEmpty)
        }
    }

    @Test func aLinkAnswersOnceForItsOwnSequenceUntilItExpires() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let asa = try await store.addCustomer(try NewCustomer(name: "Åsa", email: "asa@example.se", consent: true))
            var new = try world.task("visit", team: world.red)
            new.window = try Self.window(hoursFromNow: 30)
            new.customerID = asa.id
            let task = try await store.createTask(new)
            func answer(_ secret: String, _ what: String) async throws -> String {
                try await store.rows("SELECT teamwork_appointment_answer(\(secret), \(what), NULL, NULL)")[0].decode(String.self)
            }
            let first = try #require(try await store.issueAppointmentLink(taskID: task.id, sequence: 0))
            let second = try #require(try await store.issueAppointmentLink(taskID: task.id, sequence: 0))
            #expect(first.hasPrefix("twa_") && first.count == 47 && first != second)
            #expect(try await store.issueAppointmentLink(taskID: task.id, sequence: 1) == nil, "no such sequence")
            #expect(try await answer("twa_" + String(repeating: "A", count: 43), "confirmed") == "unknown")
            #expect(try await answer(first, "confirmed") == "done")
            #expect(try await answer(first, "cancel") == "used", "answered once")
            #expect(try await answer(second, "cancel") == "used", "another link of the same message: answered already")
            #expect(try await store.appointments(taskIDs: [task.id])[task.id]?.answer == .confirmed)
            // A new window: a new sequence, the old links superseded, the answer forgotten.
            _ = try await store.updateTask(id: task.id, try TaskChanges(window: .some(try Self.window(hoursFromNow: 40))))
            #expect(try await answer(first, "confirmed") == "superseded")
            #expect(try await store.appointments(taskIDs: [task.id])[task.id]?.answer == AppointmentAnswer.none)
            let third = try #require(try await store.issueAppointmentLink(taskID: task.id, sequence: 1))
            try await store.connection.query(
                "UPDATE appointment_links SET expires_at = now() - interval '1 second' WHERE task_id = \(task.id)", logger: store.logger)
            #expect(try await answer(third, "confirmed") == "expired")
        }
    }

    @Test func erasingACustomerLeavesNothingPersonalAndKeepsTheWork() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let asa = try await store.addCustomer(
                try NewCustomer(name: "Åsa Öberg", email: "asa@example.se", phone: "+46701234567", consent: true))
            var new = try world.task("visit", team: world.red)
            new.window = try Self.window(hoursFromNow: 30)
            new.customerID = asa.id
            let task = try await store.createTask(new)
            let export = try await store.customerExport(id: asa.id)
            #expect(export.tasks.map(\.id) == [task.id] && export.messages.count == 2 && export.customer.email == "asa@example.se")
            let erased = try await store.eraseCustomer(id: asa.id)
            #expect(erased.email == nil && erased.phone == nil && !erased.consent && erased.name == "erased customer \(asa.id)")
            #expect(try await store.customerMessages(customerID: asa.id).isEmpty)
            #expect(try await store.task(id: task.id).customerID == asa.id, "the work still points at the erased row")
            let remaining = try await store.rows(
                "SELECT count(*) FROM customers WHERE name ILIKE '%Öberg%' OR email IS NOT NULL OR phone IS NOT NULL")[0]
            #expect(try remaining.decode(Int64.self) == 0)
            // Further changes to the work queue nothing for them.
            _ = try await store.updateTask(id: task.id, try TaskChanges(window: .some(try Self.window(hoursFromNow: 40))))
            #expect(try await store.customerMessages(taskID: task.id).isEmpty)
            await #expect(throws: TeamworkError.self) { try await store.updateCustomer(id: asa.id, try CustomerChanges(consent: true)) }
        }
    }

    @Test func aSiteThatNamesAnotherCustomerBooksTheNewOneCancelsForTheOldAndTheOldLinkStopsAnswering() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let seller = try await store.addCustomer(try NewCustomer(name: "Seller", email: "seller@example.org", consent: true))
            let buyer = try await store.addCustomer(try NewCustomer(name: "Buyer", email: "buyer@example.org", consent: true))
            try await store.setSiteCustomer(locationID: world.site.id, customerID: seller.id)
            var new = try world.task("inspect", team: world.red)
            new.window = try Self.window(hoursFromNow: 30)
            let task = try await store.createTask(new)
            let sellersLink = try #require(try await store.issueAppointmentLink(taskID: task.id, sequence: 0))
            // The house is sold: the site names the buyer.
            try await store.setSiteCustomer(locationID: world.site.id, customerID: buyer.id)
            let after = try await store.customerMessages(taskID: task.id).map { "\($0.customerID):\($0.kind.rawValue)#\($0.sequence)" }
            #expect(after == ["\(seller.id):booked#0", "\(buyer.id):booked#1", "\(seller.id):cancelled#1"], "\(after)")
            #expect(try await store.answerAppointment(secret: sellersLink, answer: .cancel) == "superseded", "the seller's link is dead")
            #expect(try await store.appointments(taskIDs: [task.id])[task.id]?.customerID == buyer.id)
            // No customer at all: the buyer is told it is off.
            try await store.setSiteCustomer(locationID: world.site.id, customerID: nil)
            let last = try await store.customerMessages(taskID: task.id).last
            #expect(last?.customerID == buyer.id && last?.kind == .cancelled && last?.sequence == 2)
            // Later changes to the task tell no one again.
            _ = try await store.updateTask(id: task.id, try TaskChanges(title: "inspect again"))
            _ = try await store.assignTask(id: task.id, to: try Assignment(teamID: world.red.id, assigneeID: world.ann.id))
            #expect(try await store.customerMessages(taskID: task.id).count == 4)
        }
    }
}
