import Foundation
import PostgresNIO
import TeamworkModel

/// The customers' messages as the service's sender takes them (docs/integrations.md).
extension CentralStore {
    /// A message due to go, with what decides whether it still should.
    public struct DueMessage: Sendable {
        public var message: CustomerMessage
        /// A newer booked, changed or cancelled message for the same task and channel exists: this one is stale.
        public var superseded: Bool
        /// Messages sent to the same customer in the last 24 hours (an email and a text of the same news count once).
        public var sentToday: Int
    }

    /// Takes up to `limit` due messages, the oldest first, and holds them for `lease` (should the
    /// sender die mid-send, they are due again after it, as at-least-once delivery wants).
    /// Only those of `channels` (the ones this service can send by) are taken: another instance
    /// with more may send the rest, which wait meanwhile, saying why (``noteWaitingMessages``).
    public func claimDueMessages(
        limit: Int, lease: Duration, channels: [CustomerMessage.Channel] = [.email, .sms]
    ) async throws -> [DueMessage] {
        let seconds = Double(lease.components.seconds)
        let names = channels.map(\.rawValue)
        // One statement through ``rows(_:)``: within the store's query deadline.
        return try await rows(
            """
            WITH due AS (
                SELECT id FROM customer_messages
                 WHERE state = 'pending' AND next_attempt_at <= now() AND channel = ANY(\(names))
                 ORDER BY next_attempt_at, id LIMIT \(limit) FOR UPDATE SKIP LOCKED
            ), held AS (
                UPDATE customer_messages m SET next_attempt_at = now() + make_interval(secs => \(seconds))
                  FROM due WHERE m.id = due.id RETURNING m.*
            )
            SELECT \(unescaped: Self.messageColumns),
                   m.kind IN ('booked', 'changed', 'reminder', 'on_my_way') AND EXISTS (
                       SELECT 1 FROM customer_messages n
                        WHERE n.task_id = m.task_id AND n.channel = m.channel AND n.customer_id = m.customer_id
                          AND n.kind IN ('booked', 'changed', 'cancelled') AND n.sequence > m.sequence) AS superseded,
                   (SELECT count(DISTINCT (s.task_id, s.kind, s.sequence)) FROM customer_messages s
                     WHERE s.customer_id = m.customer_id AND s.state = 'sent' AND s.sent_at > now() - interval '1 day') AS sent_today
              FROM held m ORDER BY m.id
            """
        ).map { row in
            let r = row.makeRandomAccess()
            return DueMessage(
                message: try Self.message(row), superseded: try r["superseded"].decode(Bool.self),
                sentToday: Int(try r["sent_today"].decode(Int64.self)))
        }
    }

    /// Says on each waiting message of a channel not in `channels` that it waits for one.
    public func noteWaitingMessages(channels: [CustomerMessage.Channel]) async throws {
        let names = channels.map(\.rawValue)
        _ = try await rows(
            """
            UPDATE customer_messages SET reason = CASE channel WHEN 'email' THEN 'waiting for an email channel (TEAMWORK_SMTP_URL)'
                                                               ELSE 'waiting for an SMS channel (TEAMWORK_SMS_URL)' END
            WHERE state = 'pending' AND NOT channel = ANY(\(names)) AND reason IS NULL RETURNING id
            """)
    }

    /// Holds `ids` for `lease` from now: taken again just before they are sent, so the hold covers the send whatever composing took.
    public func holdMessages(ids: [Int64], lease: Duration) async throws {
        guard !ids.isEmpty else { return }
        _ = try await rows(
            """
            UPDATE customer_messages SET next_attempt_at = now() + make_interval(secs => \(Double(lease.components.seconds)))
            WHERE id = ANY(\(ids)) AND state = 'pending' RETURNING id
            """)
    }

    /// Records what became of a message: sent; skipped or failed for good (with why); or tried
    /// and due again in `retryIn` (with what the attempt met); `attempted` false: not tried (it waits for its budget).
    public func recordMessage(
        id: Int64, state: CustomerMessage.State, reason: String?, retryIn: Duration? = nil, attempted: Bool = true
    ) async throws {
        let retry = retryIn.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
        _ = try await rows(
            """
            UPDATE customer_messages SET state = \(state.rawValue), reason = \(reason.map { String($0.prefix(500)) }),
                   attempts = attempts + CASE WHEN \(state.rawValue) = 'skipped' OR NOT \(attempted) THEN 0 ELSE 1 END,
                   sent_at = CASE WHEN \(state.rawValue) = 'sent' THEN now() END,
                   next_attempt_at = now() + make_interval(secs => coalesce(\(retry)::double precision, 0))
            WHERE id = \(id) AND state = 'pending' RETURNING id
            """)
    }

    /// Queues the day-before reminders due at `now` (on each task's clock, from `from` on); how many.
    public func queueReminders(from: LocalTime, now: Date = Date()) async throws -> Int {
        Int(try await rows("SELECT teamwork_queue_reminders(\(from.description)::time, \(now))")[0].decode(Int32.self))
    }

    /// A new link for the customer's page about task `taskID`'s appointment at `sequence`; nil when
    /// that is no longer its appointment or its window has begun.
    public func issueAppointmentLink(taskID: Int64, sequence: Int) async throws -> String? {
        try await rows("SELECT teamwork_issue_appointment_link(\(taskID), \(Int32(sequence)))")[0].decode(String?.self)
    }

    /// Messages waiting to go (for /health and /metrics).
    public func pendingMessages() async throws -> Int {
        Int(try await rows("SELECT count(*) FROM customer_messages WHERE state = 'pending'")[0].decode(Int64.self))
    }

    /// Who signed for a task (its signatures' names), oldest first.
    public func signers(taskID: Int64) async throws -> [String] {
        try await rows(
            "SELECT DISTINCT ON (signer) signer, id FROM attachments WHERE task_id = \(taskID) AND signer IS NOT NULL ORDER BY signer, id"
        ).map { try $0.decode((String, Int64).self).0 }
    }

    /// What a link opens (``teamwork_appointment_link``); nil for an unknown secret.
    public struct AppointmentLink: Sendable {
        public var taskID: Int64
        public var sequence: Int
        public var currentSequence: Int
        public var answer: AppointmentAnswer
        public var expiresAt: Date
        public var usedAt: Date?
        public var asked: TimeWindow?
    }

    public func appointmentLink(secret: String) async throws -> AppointmentLink? {
        guard let row = try await rows("SELECT * FROM teamwork_appointment_link(\(secret))").first else { return nil }
        let r = row.makeRandomAccess()
        return AppointmentLink(
            taskID: try r["task_id"].decode(Int64.self), sequence: Int(try r["sequence"].decode(Int32.self)),
            currentSequence: Int(try r["current_sequence"].decode(Int32.self)),
            answer: AppointmentAnswer(rawValue: try r["answer"].decode(String.self)) ?? .none,
            expiresAt: try r["expires_at"].decode(Date.self), usedAt: try r["used_at"].decode(Date?.self),
            asked: try FieldTask.window(start: r["asked_start"].decode(Date?.self), end: r["asked_end"].decode(Date?.self)))
    }

    /// The customer's answer through a link: "done", or why not (see ``teamwork_appointment_answer``).
    public func answerAppointment(secret: String, answer: AppointmentAnswer, moveTo: TimeWindow? = nil) async throws -> String {
        try await rows(
            "SELECT teamwork_appointment_answer(\(secret), \(answer.rawValue), \(moveTo?.start), \(moveTo?.end))"
        )[0].decode(String.self)
    }
}

extension CentralStore {
    /// Other windows a customer may pick for task `taskID` (docs/integrations.md): the same hours
    /// on each of the next `days` days (from tomorrow, on the task's clock), where whoever has it
    /// (else someone of its team) works the whole window, counting their hours and absences
    /// (``WorkingDay``; without a week set, `otherwise`), and has no other open work in it. At most `limit`.
    public func appointmentOffers(
        taskID: Int64, days: Int, limit: Int, otherwise: DayHours, now: Date
    ) async throws -> [TimeWindow] {
        let task = try await task(id: taskID)
        guard let window = task.window else { return [] }
        let zone = task.zone
        let people: [Int64]
        if let assignee = task.assigneeID {
            people = [assignee]
        } else if let team = task.teamID {
            people = try await listPeople(teamID: team).filter { $0.deactivatedAt == nil }.map(\.id)
        } else {
            people = []
        }
        guard !people.isEmpty else { return [] }
        let (startDay, startTime) = (zone.date(of: window.start), zone.time(of: window.start))
        let length = window.end.timeIntervalSince(window.start)
        let today = zone.date(of: now)
        // Open work of those people over the days in question, as windows.
        let first = zone.day(today.adding(days: 1)).start
        let last = zone.day(today.adding(days: days)).end
        var busy: [Int64: [DateInterval]] = [:]
        for row in try await rows(
            """
            SELECT k.assignee_id, coalesce(k.planned_start, k.window_start) AS starts,
                   coalesce(k.planned_start + make_interval(mins => coalesce(k.duration_minutes, 45)), k.window_end) AS ends
              FROM tasks k
             WHERE k.assignee_id = ANY(\(people)) AND k.id <> \(taskID) AND k.status IN ('open', 'assigned', 'in_progress')
               AND k.window_start IS NOT NULL AND k.window_start < \(last) AND k.window_end > \(first)
            """)
        {
            let (person, starts, ends) = try row.decode((Int64, Date, Date).self)
            if ends > starts { busy[person, default: []].append(DateInterval(start: starts, end: ends)) }
        }
        var offers: [TimeWindow] = []
        for offset in 1...days where offers.count < limit {
            let day = today.adding(days: offset)
            guard day != startDay else { continue }
            let start = zone.instant(day, startTime)
            let candidate = DateInterval(start: start, end: start.addingTimeInterval(length))
            let times = try await workTimes(personIDs: people, day: day, zone: zone)
            let free = people.contains { person in
                guard let time = times[person],
                    let at = WorkingDay(
                        day: day, zone: zone, week: time.week, exception: time.exception, absences: time.absences, otherwise: otherwise
                    ).at, at.start <= candidate.start, at.end >= candidate.end
                else { return false }
                return !(busy[person] ?? []).contains { $0.start < candidate.end && $0.end > candidate.start }
            }
            if free { offers.append(try TimeWindow(start: candidate.start, end: candidate.end)) }
        }
        return offers
    }
}

/// A day whose customers' messages wait for the dispatcher (sql/0032).
public struct MessageHold: Sendable, Codable, Equatable {
    public var id: Int64
    public var day: LocalDate
    /// Nil: every team.
    public var teamID: Int64?
    public var note: String
    /// How many messages it holds now.
    public var held: Int

    /// What releasing a day says: `Released 2026-12-01: 1 message to customers goes now`.
    public static func released(_ count: Int, on day: LocalDate) -> String {
        "Released \(day): \(quantity(count, "message")) to customers \(count == 1 ? "goes" : "go") now"
    }
}

extension CentralStore {
    /// Holds customers' messages about tasks on `day` (each on its own clock) of team `teamID`, or
    /// of every team, as the acting manager: what is queued from now on waits, and so does what
    /// waits to go already. The hold's id.
    @discardableResult
    public func holdMessages(day: LocalDate, teamID: Int64?, note: String = "") async throws -> Int64 {
        guard note.utf8.count <= 500 else { throw TeamworkError.invalid("a hold's note has at most 500 bytes") }
        return try await transaction { connection in
            try await connection.query(
                "SELECT teamwork_hold_messages(\(day.description)::date, \(teamID), \(note))", logger: logger
            ).collect()[0].decode(Int64.self)
        }
    }

    /// Releases the hold on `day` of `teamID` (nil: the one of every team): its messages go now,
    /// but those another hold still covers. How many were released; not found when there is no such hold.
    public func releaseMessages(day: LocalDate, teamID: Int64?) async throws -> Int {
        let released = try await transaction { connection in
            try await connection.query("SELECT teamwork_release_messages(\(day.description)::date, \(teamID))", logger: logger)
                .collect()[0].decode(Int32.self)
        }
        guard released >= 0 else {
            throw TeamworkError.notFound("no hold on \(day)\(teamID.map { " for team \($0)" } ?? " for every team")")
        }
        return Int(released)
    }

    /// The holds there are, by day, with how many messages each holds now.
    public func messageHolds() async throws -> [MessageHold] {
        try await rows(
            """
            SELECT h.id, h.day::text AS day, h.team_id, h.note,
                   (SELECT count(*) FROM customer_messages m JOIN tasks t ON t.id = m.task_id
                     WHERE m.state = 'held' AND teamwork_message_day(t.id) = h.day
                       AND (h.team_id IS NULL OR t.team_id = h.team_id))::int AS held
              FROM message_holds h ORDER BY h.day, h.team_id NULLS FIRST
            """
        ).map { row in
            let r = row.makeRandomAccess()
            return MessageHold(
                id: try r["id"].decode(Int64.self), day: try LocalDate(parsing: try r["day"].decode(String.self)),
                teamID: try r["team_id"].decode(Int64?.self), note: try r["note"].decode(String.self),
                held: try r["held"].decode(Int.self))
        }
    }
}
