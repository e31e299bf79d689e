import Foundation

/// Time on a task (issue 53, docs/dispatch.md "Time on the job"): per person, task and kind (work or
/// travel), one entry from a start to an end. A worker's own `start` opens their work entry and
/// `complete` ends it (the master's automatic entries); completing a task opens their travel to
/// the next one of the day, which their start there ends. A worker sets an entry with the field
/// change `time` (`item` the kind, `value` the interval), which an automatic entry never overwrites;
/// an interval of no length removes the entry.
public enum TimeOnJob {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        case work, travel
        /// Work first, as entries are listed.
        public var order: Int { self == .work ? 0 : 1 }
    }

    /// The longest entry: a day.
    public static let longest: TimeInterval = 86_400

    /// An entry's value on the wire: ISO 8601's time interval of two instants in UTC to the second,
    /// `2026-11-30T08:00:00Z/2026-11-30T10:30:00Z`.
    public static func value(start: Date, end: Date) -> String {
        "\(instant(start))/\(instant(end))"
    }

    /// `2026-11-30T08:00:00Z` (whole seconds, UTC).
    public static func instant(_ date: Date) -> String {
        Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)).formatted(.iso8601)
    }

    /// The interval `value` names, or `nil` when it is not exactly two instants in the form
    /// ``value(start:end:)`` writes (a day that does not exist, like 02-31, is not one).
    public static func interval(_ value: String) -> (start: Date, end: Date)? {
        let parts = value.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = strictInstant(parts[0]), let end = strictInstant(parts[1]) else { return nil }
        return (start, end)
    }

    private static func strictInstant(_ text: Substring) -> Date? {
        guard text.utf8.count == 20, let date = try? Date(String(text), strategy: .iso8601), instant(date) == text else { return nil }
        return date
    }

    /// Why `kind` and `value` are not a time entry a server receiving it at `receivedAt` takes, or `nil`.
    public static func problem(kind: String?, value: String?, receivedAt: Date) -> String? {
        guard let kind, Kind(rawValue: kind) != nil else { return "a time entry is work or travel (item)" }
        guard let value, let (start, end) = interval(value) else {
            return "a time entry is a start and an end in UTC, like 2026-11-30T08:00:00Z/2026-11-30T10:30:00Z"
        }
        if end < start { return "a time entry ends after it starts" }
        if end.timeIntervalSince(start) > longest { return "a time entry lasts at most 24 hours" }
        if start < WorkerChangeBounds.earliest || end > receivedAt.addingTimeInterval(86_400) {
            return "a time entry is after 2000-01-01 and ends at most a day after the server's clock"
        }
        return nil
    }

    /// A worker's entry begins at most this many days before it is sent (the master's window when payroll
    /// has closed nothing more recent; a manager records older time).
    public static let recentDays = 31

    /// Why a worker's entry `value` received at `receivedAt` is too old to take, or `nil`.
    public static func staleProblem(value: String, receivedAt: Date) -> String? {
        guard let (start, _) = interval(value), start < receivedAt.addingTimeInterval(-Double(recentDays) * 86_400) else { return nil }
        return "a time entry begins at most \(recentDays) days before it is sent; a manager records older time"
    }

    /// One of a person's entries, as an overlap is looked for among them.
    public struct Span: Sendable, Equatable {
        public var taskID: Int64
        public var kind: String
        public var start: Date
        public var end: Date
        public init(taskID: Int64, kind: String, start: Date, end: Date) {
            (self.taskID, self.kind, self.start, self.end) = (taskID, kind, start, end)
        }
    }

    /// Why `entry` cannot be kept beside the same person's `others`, or `nil`: a person's entries never
    /// overlap (work or travel, across tasks; one ending as the next begins is fine). The entry it would
    /// replace (same task and kind) and removed ones do not count; an entry of no length removes and
    /// clashes with nothing. Names the first clash, as the master's `teamwork_time_clash` does.
    public static func clash(_ entry: Span, among others: [Span]) -> String? {
        guard entry.end > entry.start else { return nil }
        let clash =
            others
            .filter { $0.end > $0.start && !($0.taskID == entry.taskID && $0.kind == entry.kind) }
            .filter { $0.start < entry.end && $0.end > entry.start }
            .min { ($0.start, $0.taskID, $0.kind) < ($1.start, $1.taskID, $1.kind) }
        return clash.map { "it overlaps \($0.kind) on task \($0.taskID) from \(instant($0.start)) to \(instant($0.end))" }
    }

    /// Whole minutes from `start`'s minute to `end`'s: the time that passed, whatever the clocks did
    /// meanwhile. Counted so, a day's share of an entry and the entry's own minutes add up exactly
    /// (the timesheet and billing's labour agree).
    public static func minutes(_ start: Date, _ end: Date) -> Int {
        Int((end.timeIntervalSince1970 / 60).rounded(.down)) - Int((start.timeIntervalSince1970 / 60).rounded(.down))
    }

    /// The interval a person means by two of `--start`, `--end` and `--minutes` (or `--minutes` alone,
    /// ending now), on `zone`'s clock: `08:00` is today there, `2026-11-30T08:00` that day there, an
    /// instant with its offset as given; `clear` is an interval of no length (removing the entry).
    /// A one-line error for any other combination.
    public static func interval(
        start: String?, end: String?, minutes: Int?, clear: Bool, in zone: Zone, now: Date
    ) throws -> (start: Date, end: Date) {
        if let minutes, !(1...1440).contains(minutes) { throw TeamworkError.invalid("--minutes is 1 to 1440 (a day)") }
        if clear {
            guard start == nil, end == nil, minutes == nil else { throw TeamworkError.invalid("--clear takes no times") }
            return (now, now)
        }
        let ended = try end.map { try instant($0, field: "--end", in: zone, now: now) }
        let began = try start.map { try instant($0, field: "--start", in: zone, now: now) }
        switch (began, ended, minutes) {
        case let (began?, ended?, nil): return (began, ended)
        case let (began?, nil, minutes?): return (began, began.addingTimeInterval(TimeInterval(minutes * 60)))
        case let (nil, ended, minutes?):
            let last = ended ?? now
            return (last.addingTimeInterval(-TimeInterval(minutes * 60)), last)
        default: throw TeamworkError.invalid("give two of --start, --end and --minutes (or --minutes alone, ending now)")
        }
    }

    static func instant(_ text: String, field: String, in zone: Zone, now: Date) throws -> Date {
        if text.count <= 5, text.contains(":") { return zone.instant(zone.date(of: now), try LocalTime(parsing: text, field: field)) }
        return try ISODate.parse(text, field: field, in: zone)
    }

    /// `2:05` for 125 minutes.
    public static func hours(_ minutes: Int) -> String {
        "\(minutes < 0 ? "-" : "")\(abs(minutes) / 60):" + String(format: "%02d", abs(minutes) % 60)
    }
}

/// The bounds every change's times keep (``WorkerChange``'s `made_at` among them).
public enum WorkerChangeBounds {
    /// 2000-01-01.
    public static let earliest = Date(timeIntervalSince1970: 946_684_800)
}

/// One entry of time on a task, as the master keeps it.
public struct TimeEntry: Sendable, Codable, Equatable {
    public var taskID: Int64
    public var personID: Int64
    public var personName: String?
    public var kind: TimeOnJob.Kind
    public var startedAt: Date
    /// `nil` while an automatic entry runs (work started, not yet completed).
    public var endedAt: Date?
    /// Whole minutes; `nil` while open.
    public var minutes: Int?
    /// `auto` (from the worker's start and completion), `worker` (their `time` entry) or `manager`.
    public var source: String

    public init(
        taskID: Int64, personID: Int64, personName: String?, kind: TimeOnJob.Kind, startedAt: Date, endedAt: Date?, source: String
    ) {
        (self.taskID, self.personID, self.personName, self.kind) = (taskID, personID, personName, kind)
        (self.startedAt, self.endedAt, self.source) = (startedAt, endedAt, source)
        minutes = endedAt.map { TimeOnJob.minutes(startedAt, $0) }
    }

    /// Where it came from, in words: "their start and completion", "entered by the worker", "a manager's correction".
    public var origin: String {
        switch source {
        case "auto": "their start and completion"
        case "worker": "entered by the worker"
        default: "a manager's correction"
        }
    }

    /// Minutes of work and of travel over `entries` (open ones add nothing).
    public static func totals(_ entries: [TimeEntry]) -> (work: Int, travel: Int) {
        entries.reduce(into: (0, 0)) { sums, entry in
            if entry.kind == .work { sums.0 += entry.minutes ?? 0 } else { sums.1 += entry.minutes ?? 0 }
        }
    }
}

/// One entry of time on a task completed in a report's period (`report labour`): the task, the day
/// it was completed on its own clock, and the entry as invoicing reads it.
public struct TimeUse: Sendable, Codable, Equatable {
    public var taskID: Int64
    public var title: String
    public var team: String?
    public var customer: String?
    /// The day the task was completed, on its own clock (its site's or team's zone).
    public var completedOn: String
    public var entry: TimeEntry

    public init(taskID: Int64, title: String, team: String?, customer: String?, completedOn: String, entry: TimeEntry) {
        (self.taskID, self.title, self.team, self.customer, self.completedOn, self.entry) = (
            taskID, title, team, customer, completedOn, entry
        )
    }

    /// The lines invoicing reads, with headers: a line per task, person and kind, in minutes.
    public static func csvRows(_ uses: [TimeUse]) -> [[String]] {
        [["task", "title", "completed", "team", "customer", "kind", "worker", "started", "ended", "minutes", "source"]]
            + uses.map { use in
                let e = use.entry
                return [
                    String(use.taskID), use.title, use.completedOn, use.team ?? "", use.customer ?? "", e.kind.rawValue,
                    e.personName ?? String(e.personID), TimeOnJob.instant(e.startedAt), e.endedAt.map(TimeOnJob.instant) ?? "",
                    e.minutes.map(String.init) ?? "", e.source,
                ]
            }
    }
}
