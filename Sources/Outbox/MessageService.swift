import CentralStore
import DayPlanner
import Egress
import Foundation
import Logging
import ServiceLifecycle
import TeamworkFormats
import TeamworkModel

/// Sends the customers' messages from the outbox (docs/integrations.md): email over SMTP with an
/// iCalendar invitation for booked, changed and cancelled visits, and a text through an SMS
/// provider's HTTP endpoint. At least once: a message is held while it is sent and goes again
/// after the hold should the service die mid-send, with the same Message-ID (email) or id (SMS).
/// What cannot go says why on its row: no consent, no channel configured, superseded by a newer
/// change, or the customer's budget for the day spent.
public struct MessageService: Service {
    public struct SMSTarget: Sendable {
        public var url: String
        /// The Standard Webhooks secret (`whsec_...`) its requests are signed with.
        public var secret: String

        public init(url: String, secret: String) throws {
            _ = try WebhookSubscription.validURL(url)
            guard secret.hasPrefix("whsec_"), Data(base64Encoded: String(secret.dropFirst(6))).map({ $0.count >= 24 }) == true else {
                throw TeamworkError(.configuration, "the SMS secret (TEAMWORK_SMS_SECRET) is whsec_ and at least 24 bytes in base64")
            }
            self.url = url
            self.secret = secret
        }
    }

    public struct Settings: SenderConfiguration {
        public var smtp: SMTPSettings?
        public var sms: SMSTarget?
        /// Where customers open their links: `https://visits.example.com` (links are `/appointment/SECRET`).
        public var publicURL: String
        /// The company's name: the sender of email and texts, their words ({company}), the
        /// invitation's organizer and the customer's page.
        public var company: String = "Teamwork"
        public var templates = MessageTemplates.builtIn
        /// From when on the day before a visit its reminder goes, on the site's clock.
        public var reminderTime = LocalTime(hour: 9, minute: 0)!
        /// Messages to one customer in 24 hours, at most.
        public var dailyLimit = 10
        /// A text's deadline is `timeout` (an email's conversation has the relay's, ``SMTPSettings``); the egress
        /// policy says where the SMS endpoint may be.
        public var sending = SenderSettings(
            concurrency: 4, timeout: .seconds(10), attempts: 8, retryBase: .seconds(30), retryMaximum: .seconds(3600))
        /// What time it is for reminders and for a visit being over.
        public var clock = WallClock.system

        public init(publicURL: String) { self.publicURL = publicURL }
    }

    let databaseURL: DatabaseURL
    let settings: Settings
    let logger: Logger
    let progress: @Sendable (_ sent: Int, _ failed: Int, _ pending: Int) -> Void

    public init(
        databaseURL: DatabaseURL, settings: Settings, logger: Logger,
        progress: @escaping @Sendable (_ sent: Int, _ failed: Int, _ pending: Int) -> Void = { _, _, _ in }
    ) {
        self.databaseURL = databaseURL
        self.settings = settings
        self.logger = logger
        self.progress = progress
    }

    public func run() async throws {
        let (settings, logger) = (settings, logger)
        logger.info(
            "customer messages",
            metadata: [
                "email": "\(settings.smtp?.redacted ?? "none (TEAMWORK_SMTP_URL)")",
                "sms": "\(settings.sms?.url ?? "none (TEAMWORK_SMS_URL)")", "links": "\(settings.publicURL)/appointment/…",
            ])
        await Self.sender(settings: settings, logger: logger).run(
            url: databaseURL, poll: settings.poll,
            stallWindow: settings.stallWindow, what: "customer messages", logger: logger, progress: progress)
    }

    /// The channels this service can send by.
    static func channels(_ settings: Settings) -> [CustomerMessage.Channel] {
        (settings.smtp == nil ? [] : [.email]) + (settings.sms == nil ? [] : [.sms])
    }

    /// When reminders were last queued: every 10 seconds is plenty for "from 09:00 the day before".
    static let remindersQueued = Locked<ContinuousClock.Instant?>(nil)

    /// One claim, sent and recorded (for the tests): how many went and failed, and (when nothing was due) how many wait.
    static func pass(_ store: any OutboxStore, settings: Settings, logger: Logger) async throws -> (Int, Int, Int?) {
        try await sender(settings: settings, logger: logger).once(store)
    }

    /// The outbox's messages as an ``OutboxSender``: a claim queues due reminders (every 10 s), then
    /// takes what is due by the channels this service has and composes it (messages for a channel it
    /// lacks wait, saying why); each outcome is recorded as soon as it is known, so a crash while one
    /// is held leaves only that one to go again.
    static func sender(settings: Settings, logger: Logger) -> OutboxSender<(CentralStore.DueMessage, Outgoing), SendOutcome> {
        // Held for as long as one conversation may take (the relay is cut off then) and a margin; a text: its timeout.
        // Taken again just before sending, so composing does not eat into it.
        let lease = max(settings.smtp?.totalTimeout ?? settings.timeout, settings.timeout) + .seconds(5)
        return OutboxSender(
            concurrency: settings.concurrency,
            claim: { store, limit in
                let now = ContinuousClock.now
                if remindersQueued.value.map({ now - $0 >= .seconds(10) }) ?? true {
                    _ = try await store.queueReminders(from: settings.reminderTime, now: settings.clock.now())
                    remindersQueued.mutate { $0 = now }
                }
                let channels = Self.channels(settings)
                if channels.count < 2 { try await store.noteWaitingMessages(channels: channels) }
                let due = channels.isEmpty ? [] : try await store.claimDueMessages(limit: limit, lease: lease, channels: channels)
                var ready: [(CentralStore.DueMessage, Outgoing)] = []
                for item in due {
                    if item.superseded {
                        try await store.recordMessage(id: item.message.id, state: .skipped, reason: "superseded by a newer change")
                        continue
                    }
                    // Over the customer's budget: it waits an hour (a cancellation always goes).
                    if item.sentToday >= settings.dailyLimit, item.message.kind != .cancelled {
                        try await store.recordMessage(
                            id: item.message.id, state: .pending,
                            reason: "waiting: \(settings.dailyLimit) messages went to this customer in the last 24 hours",
                            retryIn: .seconds(3600), attempted: false)
                        continue
                    }
                    do {
                        ready.append((item, try await Self.compose(item.message, store: store, settings: settings)))
                    } catch let skip as Skip {
                        try await store.recordMessage(id: item.message.id, state: .skipped, reason: skip.reason)
                    }
                }
                try await store.holdMessages(ids: ready.map(\.0.message.id), lease: lease)
                return .init(ready: ready, full: due.count >= limit)
            },
            send: { await Self.send($0.1, settings: settings) },
            record: { store, item, outcome in
                try await Self.record(item.0.message, outcome, store: store, settings: settings, logger: logger)
                return outcome.sent
            },
            pending: { try await $0.pendingMessages() })
    }

    static func record(
        _ message: CustomerMessage, _ outcome: SendOutcome, store: any OutboxStore, settings: Settings, logger: Logger
    ) async throws {
        if outcome.sent { return try await store.recordMessage(id: message.id, state: .sent, reason: nil) }
        var retryIn: Duration?
        if !outcome.permanent, message.attempts + 1 < settings.attempts {
            var backoff = Backoff(initial: settings.retryBase, maximum: settings.retryMaximum, jitter: .full)
            for _ in 0...message.attempts { retryIn = backoff.next() }
        }
        logger.notice(
            "customer message failed",
            metadata: [
                "message": "\(message.id)", "channel": "\(message.channel.rawValue)", "error": "\(outcome.error)",
                "retry_in": "\(retryIn.map { "\($0)" } ?? "no more")",
            ])
        try await store.recordMessage(id: message.id, state: retryIn == nil ? .failed : .pending, reason: outcome.error, retryIn: retryIn)
    }

    /// A message ready to go.
    enum Outgoing: Sendable {
        case email(MailMessage)
        case sms(id: String, to: String, text: String)
    }

    struct SendOutcome: Sendable {
        var sent: Bool
        var error: String = ""
        var permanent = false
    }

    static func send(_ outgoing: Outgoing, settings: Settings) async -> SendOutcome {
        switch outgoing {
        case .email(let mail):
            guard let smtp = settings.smtp else { return SendOutcome(sent: false, error: "no email channel", permanent: true) }
            do {
                try await SMTPClient.send(mail, settings: smtp)
                return SendOutcome(sent: true)
            } catch let failure as SMTPFailure {
                return SendOutcome(sent: false, error: failure.description, permanent: failure.permanent)
            } catch {
                return SendOutcome(sent: false, error: "\(error)")
            }
        case .sms(let id, let to, let text):
            guard let sms = settings.sms else { return SendOutcome(sent: false, error: "no SMS channel", permanent: true) }
            let body = (try? JSONEncoder().encode(["id": id, "to": to, "text": text])) ?? Data()
            let outcome = await WebhookService.post(
                body, to: sms.url, id: id, secrets: [sms.secret], timeout: settings.timeout, egress: settings.egress)
            return SendOutcome(
                sent: outcome.delivered, error: outcome.error ?? outcome.status.map { "HTTP \($0)" } ?? "", permanent: outcome.final)
        }
    }

    /// Why a message that was due no longer goes: what changed since it was written.
    struct Skip: Error {
        var reason: String
    }

    /// The message's words (and for an appointment, its invitation and link), from the task and the
    /// customer as they stand now: one who was erased, withdrew consent or lost the address gets nothing.
    static func compose(_ message: CustomerMessage, store: any OutboxStore, settings: Settings) async throws -> Outgoing {
        // Only "no such row" means gone; any other failure (the master away) ends the pass, and the held
        // messages go again after their hold.
        func found<T>(_ read: () async throws -> T) async throws -> T? {
            do { return try await read() } catch let error as TeamworkError where error.code == .notFound { return nil }
        }
        guard let customer = try await found({ try await store.customer(id: message.customerID) }), customer.erasedAt == nil else {
            throw Skip(reason: "the customer was erased")
        }
        guard customer.consent else { throw Skip(reason: "the customer no longer agrees to messages") }
        guard let task = try await found({ try await store.task(id: message.taskID) }) else { throw Skip(reason: "the task was deleted") }
        // News of a visit that is over by now (a message that waited for a channel) is not news.
        if [.booked, .changed, .reminder, .onMyWay].contains(message.kind), let window = task.window, window.end < settings.clock.now() {
            throw Skip(reason: "the visit is over")
        }
        let site = try await task.locationID.asyncMap { try await store.location(id: $0) }
        let zone = task.zone
        let worker = try await (message.kind == .done ? task.completedBy : task.assigneeID).asyncMap { try await store.person(id: $0) }
        var values: [String: String] = [
            "name": customer.name, "task": task.title, "company": settings.company,
            "site": site.map { [$0.name, $0.address.singleLine].filter { !$0.isEmpty }.joined(separator: ", ") } ?? "",
            "window": task.window.map { MessageWindow.text($0, zone: zone, language: customer.language) } ?? "",
            "worker": worker?.firstName ?? (customer.language == .sv ? "Vår tekniker" : "Our technician"),
            "link": customer.language == .sv ? "svara på det här meddelandet" : "reply to this message",
            "eta": "", "summary": "", "used": "",
        ]
        if [.booked, .changed].contains(message.kind),
            let secret = try await store.issueAppointmentLink(taskID: task.id, sequence: message.sequence)
        {
            values["link"] = settings.publicURL + "/appointment/" + secret
        }
        if message.kind == .onMyWay {
            var eta = task.plannedStart ?? task.window?.start ?? settings.clock.now()
            if let after = await message.afterTaskID.asyncMap({ try? await store.task(id: $0) }) ?? nil,
                let from = try await after.locationID.asyncMap({ try await store.location(id: $0) }), let site
            {
                let area = try await task.teamID.asyncMap { try await store.team(id: $0).travelArea } ?? .urban
                let minutes = TravelEstimate(area: area).minutes(
                    from: Coordinate(latitude: from.latitude, longitude: from.longitude),
                    to: Coordinate(latitude: site.latitude, longitude: site.longitude))
                eta = settings.clock.now().addingTimeInterval((minutes / 5).rounded(.up) * 300)
            }
            values["eta"] = MessageTemplates.clock(eta, in: zone)
        }
        if message.kind == .done {
            var summary: [String] = []
            if let checklist = task.checklist { summary.append(checklist.summary(task.answers)) }
            let signers = try await store.signers(taskID: task.id)
            if !signers.isEmpty {
                summary.append((customer.language == .sv ? "Signerat av " : "Signed by ") + signers.joined(separator: ", "))
            }
            if let note = task.completionNote, !note.isEmpty { summary.append(note) }
            values["summary"] = summary.joined(separator: "\n")
            // What was used, for a company whose template asks for it ({used}): names and quantities, no prices.
            let used = try await store.materials(ofTask: task.id)
            if !used.isEmpty {
                values["used"] =
                    (customer.language == .sv ? "Förbrukat material:" : "Used on the job:")
                    + used.map { "\n- \($0.name): \($0.quantity)\($0.unit.map { " \($0)" } ?? "")" }.joined()
            }
        }
        let words = settings.templates.render(message.kind, customer.language, values)
        switch message.channel {
        case .sms:
            guard let phone = customer.phone else { throw Skip(reason: "the customer has no phone number now") }
            let link = values["link"].flatMap { $0.hasPrefix("http") ? $0 : nil }
            return .sms(id: "msg_\(message.id)", to: phone, text: words.subject + (link.map { " " + $0 } ?? ""))
        case .email:
            guard let email = customer.email else { throw Skip(reason: "the customer has no email address now") }
            guard let smtp = settings.smtp else { throw Skip(reason: "no email channel is configured (TEAMWORK_SMTP_URL)") }
            var calendar: (method: String, text: String)?
            if [.booked, .changed, .cancelled].contains(message.kind), let window = task.window {
                let cancelled = message.kind == .cancelled
                var event = ICalendar.Event(
                    uid: "task-\(task.id)@" + (smtp.from.split(separator: "@").last.map(String.init) ?? "teamwork"),
                    sequence: message.sequence, start: window.start, end: window.end,
                    // A cancelled visit's update carries no link: there is nothing left to answer.
                    summary: task.title, location: values["site"] ?? "", description: cancelled ? "" : values["link"] ?? "",
                    status: cancelled ? "CANCELLED" : "CONFIRMED", lastModified: task.updatedAt)
                event.organizer = (settings.company, smtp.from)
                event.attendee = (customer.name, email)
                let method = cancelled ? "CANCEL" : "REQUEST"
                calendar = (method, ICalendar(name: settings.company, events: [event], method: method, zone: zone).text())
            }
            let host = smtp.from.split(separator: "@").last.map(String.init) ?? "teamwork.invalid"
            return .email(
                MailMessage(
                    from: smtp.from, fromName: settings.company, to: email,
                    toName: customer.name, subject: words.subject, text: words.body, calendar: calendar,
                    messageID: "<msg-\(message.id)@\(host)>"))
        }
    }
}
