import Foundation
import LocalPostgres
import Logging
import TeamworkFormats
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore
@testable import Outbox

/// The pieces of a customer's message on their own: the SMTP address an operator gives, the
/// headers no customer's or task's text can break, a company's own words, and the time zone an
/// invitation carries.
@Suite("Message parts")
struct MessagePartsTests {
    @Test func anSMTPAddressSaysHowToReachTheRelayAndABadOneIsRefusedInOneLine() throws {
        let relay = try SMTPSettings.parse("smtp://visits:p%40ss@mail.example.com?from=visits@example.com&name=Red")
        #expect(relay.host == "mail.example.com" && relay.port == 587 && relay.security == .startTLS)
        #expect(relay.username == "visits" && relay.password == "p@ss" && relay.from == "visits@example.com")
        #expect(relay.redacted == "smtp://visits:***@mail.example.com:587")
        #expect(try SMTPSettings.parse("smtps://mail.example.com?from=a@example.com").port == 465)
        #expect(try SMTPSettings.parse("smtp://localhost:2525?from=a@example.com").security == .startTLSIfOffered)
        #expect(try SMTPSettings.parse("smtp://127.0.0.1:2525?from=a@example.com&starttls=never").security == .none)
        for bad in [
            "http://mail.example.com?from=a@example.com", "smtp://mail.example.com", "smtp://mail.example.com?from=nobody",
            "smtp://mail.example.com?from=a@example.com&starttls=never", "smtp://user@mail.example.com?from=a@example.com",
            "smtp://mail.example.com?from=a@example.com&starttls=maybe",
        ] {
            #expect(throws: TeamworkError.self, "\(bad)") { try SMTPSettings.parse(bad) }
        }
    }

    /// An idle sender with nothing waiting does not ask the master every `poll` (an idle service
    /// asked 8 times a second for its two senders, seen with strace): it looks when the master says
    /// something was queued (NOTIFY teamwork_outbox), long before its idle look would come, and
    /// otherwise four times in the stall window /health judges it by.
    @Test func anIdleSenderLooksWhenTheMasterSaysSomethingWasQueuedNotEveryPoll() async throws {
        #expect(OutboxSender<Int, Bool>.idleWait(poll: .milliseconds(500), stallWindow: .seconds(30)) == .seconds(5))
        #expect(OutboxSender<Int, Bool>.idleWait(poll: .milliseconds(500), stallWindow: .seconds(8)) == .seconds(2))
        #expect(OutboxSender<Int, Bool>.idleWait(poll: .milliseconds(500), stallWindow: .seconds(1)) == .milliseconds(500))
        try await TestDatabase.withFresh { url in
            let queue = Locked<[Int]>([])
            let claims = Locked(0)
            let sent = Locked<[Int: ContinuousClock.Instant]>([:])
            let sender = OutboxSender<Int, Bool>(
                concurrency: 2,
                claim: { _, limit in
                    claims.mutate { $0 += 1 }
                    let taken = queue.mutate { queue -> [Int] in
                        defer { queue.removeFirst(min(limit, queue.count)) }
                        return Array(queue.prefix(limit))
                    }
                    return .init(ready: taken, full: taken.count == limit)
                },
                send: { item in
                    sent.mutate { $0[item] = .now }
                    return true
                },
                record: { _, _, _ in true },
                pending: { _ in queue.value.count })
            // Idle, it looks every 5 s (a quarter of 20 s); with nothing listened for, it would every 100 ms.
            let running = Task {
                await sender.run(url: url, poll: .milliseconds(100), stallWindow: .seconds(20), what: "test", logger: Logger(label: "test"))
                {
                    _, _, _ in
                }
            }
            defer { running.cancel() }
            try await Task.sleep(for: .seconds(3))
            // The first look, and one when the LISTEN is registered: not one every 100 ms (30).
            #expect(claims.value <= 4, "\(claims.value) looks in 3 s of nothing")
            queue.mutate { $0.append(7) }
            let queued = ContinuousClock.now
            try await CentralStore.withStore(url) { store in
                _ = try await store.rows("SELECT pg_notify('teamwork_outbox', '')")
            }
            #expect(try await eventually(within: .seconds(30)) { sent.value[7] != nil })
            let after = try #require(sent.value[7]) - queued
            #expect(after < .seconds(4), "sent \(after) after it was queued: it waited for its idle look")
        }
    }

    @Test func noTextOfACustomersOrATasksCanAddAHeaderToAnEmail() {
        let mail = MailMessage(
            from: "visits@example.com", fromName: "Red \"crew\"", to: "asa@example.se", toName: "Åsa\r\nBcc: evil@example.com",
            subject: "Fix it\r\nBcc: evil@example.com", text: "Hello\n.\nStill the body", messageID: "<msg-1@example.com>",
            date: Date(timeIntervalSince1970: 0))
        let text = mail.rendered()
        let headers = text.components(separatedBy: "\r\n\r\n")[0].components(separatedBy: "\r\n")
        #expect(!headers.contains { $0.lowercased().hasPrefix("bcc:") }, "\(headers)")
        #expect(headers.contains("Subject: Fix it  Bcc: evil@example.com"))
        #expect(headers.contains("Date: Thu, 01 Jan 1970 00:00:00 +0000") && headers.contains("Message-ID: <msg-1@example.com>"))
        #expect(headers.contains { $0.hasPrefix("To: =?utf-8?B?") && $0.hasSuffix("<asa@example.se>") })
        #expect(headers.contains("From: \"Red crew\" <visits@example.com>"))
    }

    @Test func aCompanysOwnWordsReplaceTheBuiltInOnesAndAFileTeamworkDoesNotKnowIsRefused() throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "templates-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("Subject: Vi ses {window}\n\nHej {name}, {link}\n".utf8).write(to: folder.appending(path: "booked.sv.txt"))
        let templates = try MessageTemplates.load(folder: folder.path)
        let words = templates.render(.booked, .sv, ["window": "fredag", "name": "Åsa", "link": "https://x.example/a"])
        #expect(words.subject == "Vi ses fredag" && words.body == "Hej Åsa, https://x.example/a\n")
        #expect(templates.render(.booked, .en, ["task": "Fix"]).subject.hasPrefix("Your visit: Fix"), "English stays built in")
        try Data("Subject: {secret}\n\nbody".utf8).write(to: folder.appending(path: "done.en.txt"))
        #expect(throws: TeamworkError.self) { try MessageTemplates.load(folder: folder.path) }
        try FileManager.default.removeItem(at: folder.appending(path: "done.en.txt"))
        try Data("Subject: x\n\nbody".utf8).write(to: folder.appending(path: "invoice.en.txt"))
        #expect(throws: TeamworkError.self) { try MessageTemplates.load(folder: folder.path) }
    }

    @Test func anInvitationCarriesItsZonesChangesAroundTheVisitAndTimesOnThatClock() throws {
        let zone = try Zone("Europe/Stockholm")
        let start = zone.instant(try LocalDate(parsing: "2026-12-03"), try LocalTime(parsing: "10:00"))
        var event = ICalendar.Event(
            uid: "task-1@teamwork", sequence: 2, start: start, end: start.addingTimeInterval(7200), summary: "Fix", location: "",
            description: "", lastModified: start)
        event.attendee = ("Åsa \"Ö\"", "asa@example.se")
        let text = ICalendar(name: "Red", events: [event], method: "REQUEST", zone: zone).text(now: start)
        #expect(text.contains("METHOD:REQUEST\r\n") && text.contains("DTSTART;TZID=Europe/Stockholm:20261203T100000\r\n"))
        #expect(text.contains("BEGIN:VTIMEZONE\r\nTZID:Europe/Stockholm\r\n"))
        // The spring change of 2026: 02:00 CET to 03:00 CEST, its onset as the clock read before it.
        #expect(text.contains("BEGIN:DAYLIGHT\r\nDTSTART:20260329T020000\r\nTZOFFSETFROM:+0100\r\nTZOFFSETTO:+0200\r\n"))
        #expect(text.contains("ATTENDEE;CN=\"Åsa Ö\";ROLE=REQ-PARTICIPANT;RSVP=FALSE:mailto:asa@example.se"))
        let utc = ICalendar(name: "Red", events: [event], method: "REQUEST", zone: .utc).text(now: start)
        #expect(utc.contains("DTSTART:20261203T090000Z") && !utc.contains("VTIMEZONE"))
    }

    @Test func overItsDailyBudgetACustomersMessageWaitsUntriedButACancellationStillGoes() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let busy = try await store.addCustomer(try NewCustomer(name: "Busy", email: "busy@example.org", consent: true))
            var tasks: [FieldTask] = []
            for day in 0..<11 {
                var new = try world.task("visit \(day)", team: world.red)
                let start = Date().addingTimeInterval(Double(day + 2) * 86_400)
                new.window = try TimeWindow(start: start, end: start.addingTimeInterval(3600))
                new.customerID = busy.id
                tasks.append(try await store.createTask(new))
            }
            // Ten went today already.
            try await store.connection.query(
                "UPDATE customer_messages SET state = 'sent', sent_at = now() WHERE task_id <> \(tasks[10].id)", logger: store.logger)
            _ = try await store.cancelTask(id: tasks[0].id)
            var settings = MessageService.Settings(publicURL: "http://127.0.0.1:9")
            // A relay that is not there: whatever is tried fails, and is kept for a retry.
            settings.smtp = try SMTPSettings.parse("smtp://127.0.0.1:9?from=visits@example.com&starttls=never")
            _ = try await MessageService.pass(store, settings: settings, logger: store.logger)
            let waiting = try #require(try await store.customerMessages(taskID: tasks[10].id).first)
            #expect(waiting.state == .pending && waiting.attempts == 0, "not tried")
            #expect(waiting.reason == "waiting: 10 messages went to this customer in the last 24 hours")
            let cancelled = try #require(try await store.customerMessages(taskID: tasks[0].id).last)
            #expect(cancelled.kind == .cancelled && cancelled.attempts == 1, "tried, whatever the budget: \(cancelled)")
            #expect(cancelled.reason?.contains("cannot reach the SMTP relay") == true && cancelled.reason?.contains("busy@") == false)
        }
    }

    @Test func aDoneMessageSaysWhoDidTheWorkTheChecklistAndWhoSignedInTheCustomersLanguage() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let asa = try await store.addCustomer(try NewCustomer(name: "Åsa", email: "asa@example.se", language: .sv, consent: true))
            _ = try await store.publishChecklist(
                name: "besok", items: [ChecklistItem(key: "done", kind: .check, label: "Klart", required: true)], existing: false)
            var new = try world.task("Byt mätare", team: world.red, assignee: world.ann)
            new.checklist = "besok"
            new.customerID = asa.id
            let task = try await store.createTask(new)
            try await store.connection.query(
                """
                INSERT INTO attachments (task_id, person_id, change_id, item, sha256, size, media_type, signer, captured_at, received_at)
                VALUES (\(task.id), \(world.ann.id), 'c-1', NULL, \(String(repeating: "b", count: 64)), 10, 'image/png', 'Åsa Öberg',
                        now(), now())
                """, logger: store.logger)
            let answered = "{\"done\": {\"value\": \"yes\", \"by\": \(world.ann.id), \"at\": 0}}"
            try await store.connection.query(
                """
                UPDATE tasks SET status = 'completed', completed_at = now(), completed_by = assignee_id, answers = \(answered)::jsonb,
                       completion_note = 'Mätaren bytt' WHERE id = \(task.id)
                """, logger: store.logger)
            let done = try #require(try await store.customerMessages(taskID: task.id).first { $0.kind == .done })
            var settings = MessageService.Settings(publicURL: "https://visits.example.com")
            settings.company = "Röda Teamet"
            settings.smtp = try SMTPSettings.parse("smtp://127.0.0.1:9?from=visits@example.com&starttls=never")
            guard case .email(let mail) = try await MessageService.compose(done, store: store, settings: settings) else {
                Issue.record("an email, for a customer with an address")
                return
            }
            #expect(mail.subject == "Klart: Byt mätare" && mail.to == "asa@example.se" && mail.calendar == nil)
            #expect(mail.text.contains("ann har gjort klart Byt mätare"), "\(mail.text)")
            #expect(mail.text.contains("besok v1: 1 of 1 answered") && mail.text.contains("Signerat av Åsa Öberg"), "\(mail.text)")
            #expect(mail.text.contains("Mätaren bytt") && mail.text.hasSuffix("Röda Teamet"))
        }
    }

    /// Whole lines, or (seen passing for the first answer over TLS on main) a part of a line with no line end.
    @Test(arguments: ["220 go ahead\\r\\n250-relay\\r\\n250 AUTH PLAIN\\r\\n235 welcome\\r\\n", "220 go ahead\\r\\n250 AUTH"])
    func aReplyInjectedInClearAfterTheRelayAgreesToSTARTTLSIsRefused(injected: String) async throws {
        let port = ServiceProcess.freePort()
        // Someone between us and the relay answers STARTTLS and, in the same breath, what comes next.
        let script = """
            import socket, sys
            server = socket.socket(); server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", int(sys.argv[1]))); server.listen(1)
            print("listening", flush=True)
            client, _ = server.accept(); reader = client.makefile("rb")
            client.sendall(b"220 relay\\r\\n"); reader.readline()
            client.sendall(b"250-relay\\r\\n250 STARTTLS\\r\\n"); reader.readline()
            client.sendall(b"\(injected)")
            reader.read(1)
            """
        let log = FileManager.default.temporaryDirectory.appending(path: "relay-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        let pid = try ChildProcess.spawn(
            ["/usr/bin/env", "python3", "-c", script, String(port)], standardOutput: log.path, standardError: log.path)
        defer {
            kill(pid, SIGKILL)
            _ = try? ChildProcess.wait(pid)
        }
        #expect(
            try await eventually(within: .seconds(10)) { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("listening") })
        var settings = try SMTPSettings.parse("smtp://u:p@127.0.0.1:\(port)?from=visits@example.com&starttls=required")
        settings.totalTimeout = .seconds(10)
        let mail = MailMessage(
            from: "visits@example.com", fromName: "", to: "a@example.org", toName: "", subject: "x", text: "x", messageID: "<m@x>")
        do {
            try await SMTPClient.send(mail, settings: settings)
            Issue.record("sent through a relay that spoke in clear after STARTTLS")
        } catch let failure as SMTPFailure {
            #expect(failure.description == "the SMTP relay said more in clear after agreeing to STARTTLS", "\(failure)")
        }
    }

    /// The relay follows the address rule of everything the service sends out: its name is resolved
    /// once and the conversation goes to an address of that answer; a name that resolves nowhere is one
    /// line naming the relay, to be tried again later.
    @Test func aRelayNamedByItsHostNameIsReachedAtAnAddressItResolvesToAndANameThatResolvesNowhereIsOneLine() async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "relay-name-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let catcher = try CustomerMessagesEndToEndTests.Catcher(in: folder)
        defer { catcher.stop() }
        try await catcher.waitUntilListening()
        let mail = MailMessage(
            from: "visits@example.com", fromName: "", to: "a@example.org", toName: "", subject: "by name", text: "x",
            messageID: "<name@x>")
        try await SMTPClient.send(mail, settings: try SMTPSettings.parse("smtp://localhost:\(catcher.port)?from=visits@example.com"))
        #expect(try await catcher.mails().map(\.subject) == ["by name"])

        let nowhere = try SMTPSettings.parse("smtp://relay.teamwork.invalid?from=visits@example.com")
        do {
            try await SMTPClient.send(mail, settings: nowhere)
            Issue.record("sent through a relay whose name resolves nowhere")
        } catch let failure as SMTPFailure {
            #expect(failure.description.hasPrefix("cannot reach the SMTP relay relay.teamwork.invalid:587: "), "\(failure)")
            #expect(!failure.permanent && !failure.description.contains("\n"))
        }
    }
}
