import Foundation

/// Hours on one day, on a wall clock: `07:00-16:00`.
public struct DayHours: Sendable, Hashable, Codable, CustomStringConvertible {
    public var start: LocalTime
    public var end: LocalTime

    public init(start: LocalTime, end: LocalTime) throws {
        guard start < end else { throw TeamworkError.invalid("working hours must start before they end, on one day") }
        self.start = start
        self.end = end
    }

    /// `07:00-16:00`; a one-line error naming `field` otherwise.
    public init(parsing text: String, field: String = "hours") throws {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = try? LocalTime(parsing: String(parts[0]), field: field),
            let end = try? LocalTime(parsing: String(parts[1]), field: field), start < end
        else { throw TeamworkError.invalid("\(field) must be a start and an end on one day, like 07:00-16:00") }
        self.start = start
        self.end = end
    }

    public var description: String { "\(start.short)-\(end.short)" }

    /// The hours of someone with no working week of their own, unless a planner is told otherwise.
    public static let usual = try! DayHours(start: LocalTime(hour: 7, minute: 0)!, end: LocalTime(hour: 16, minute: 0)!)
    /// The whole day: someone with no week set who is asked about a time, not planned.
    public static let allDay = try! DayHours(start: LocalTime(hour: 0, minute: 0)!, end: LocalTime(hour: 23, minute: 59)!)
}

extension LocalTime {
    /// `07:00`: hours and minutes.
    public var short: String { String(format: "%02d:%02d", hour, minute) }
}

/// A person's working week, on their team's clock: hours per ISO weekday (1 = Monday); a
/// weekday without hours is a day off. An empty week means no pattern was set: the person works
/// whatever hours the planner is given.
public struct WorkingWeek: Sendable, Equatable, Codable {
    public var days: [Int: DayHours]

    public init(days: [Int: DayHours] = [:]) {
        self.days = days
    }

    public var isEmpty: Bool { days.isEmpty }

    static let names = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    /// Reads `mon-fri 07:00-16:00` (a range or a list of weekdays, then hours); several such parts
    /// may be given, later ones overriding earlier ones for the days they name.
    public init(parsing parts: [String]) throws {
        var days: [Int: DayHours] = [:]
        for part in parts {
            let words = part.split(separator: " ", omittingEmptySubsequences: true).map { $0.lowercased() }
            guard words.count == 2 else {
                throw TeamworkError.invalid("hours must read like \"mon-fri 07:00-16:00\" (got \"\(part)\")")
            }
            let hours = try DayHours(parsing: words[1])
            for weekday in try Self.weekdays(words[0]) { days[weekday] = hours }
        }
        self.days = days
    }

    /// `mon-fri`, `sat`, `mon,wed,fri` as ISO weekday numbers.
    static func weekdays(_ text: String) throws -> [Int] {
        func number(_ name: Substring) throws -> Int {
            guard let index = names.firstIndex(of: String(name.prefix(3))), name.count >= 3 else {
                throw TeamworkError.invalid("a weekday is mon, tue, wed, thu, fri, sat or sun (got \"\(name)\")")
            }
            return index + 1
        }
        var result: [Int] = []
        for item in text.split(separator: ",") {
            let ends = item.split(separator: "-")
            guard (1...2).contains(ends.count) else { throw TeamworkError.invalid("a weekday range reads like mon-fri") }
            let (first, last) = (try number(ends[0]), try number(ends[ends.count - 1]))
            guard first <= last else { throw TeamworkError.invalid("a weekday range runs from Monday towards Sunday, like mon-fri") }
            result += Array(first...last)
        }
        return result
    }

    /// `mon-fri 07:00-16:00, sat 08:00-12:00`; `not set` when empty.
    public var description: String {
        guard !isEmpty else { return "not set" }
        var parts: [String] = []
        var weekday = 1
        while weekday <= 7 {
            guard let hours = days[weekday] else {
                weekday += 1
                continue
            }
            var last = weekday
            while last < 7, days[last + 1] == hours { last += 1 }
            let span = last == weekday ? Self.names[weekday - 1] : "\(Self.names[weekday - 1])-\(Self.names[last - 1])"
            parts.append("\(span) \(hours)")
            weekday = last + 1
        }
        return parts.joined(separator: ", ")
    }
}

/// Why someone is away.
public enum AbsenceReason: String, Sendable, Codable, CaseIterable {
    case vacation, sick, training, other
}

/// A time someone is away: from one instant to another.
public struct Absence: Sendable, Equatable, Codable, Identifiable {
    public var id: Int64
    public var personID: Int64
    public var startsAt: Date
    public var endsAt: Date
    public var reason: AbsenceReason
    public var note: String

    public init(id: Int64, personID: Int64, startsAt: Date, endsAt: Date, reason: AbsenceReason, note: String) {
        self.id = id
        self.personID = personID
        self.startsAt = startsAt
        self.endsAt = endsAt
        self.reason = reason
        self.note = note
    }
}

/// When a person is at work on a day: their hours that day (a dated exception, else their week,
/// else the hours given), less their absences. The one rule the planner and the board read.
public struct WorkingDay: Sendable, Equatable {
    /// From when to when they work; nil: not at all (a day off, or away all day).
    public var at: DateInterval?
    /// Why they are away for some or all of the day, when an absence touches it.
    public var away: AbsenceReason?
    /// Every stretch of the day they work: their hours less every absence (``at`` is one of them, to plan).
    public var free: [DateInterval] = []

    /// `exception`: `.some(nil)` is a day off; `nil` means there is none for the day.
    public init(
        day: LocalDate, zone: Zone, week: WorkingWeek, exception: DayHours??, absences: [Absence], otherwise: DayHours
    ) {
        let hours: DayHours?
        if let exception { hours = exception } else if week.isEmpty { hours = otherwise } else { hours = week.days[day.weekday] }
        let span = zone.day(day)
        let touching = absences.filter { $0.startsAt < span.end && $0.endsAt > span.start }.sorted { $0.startsAt < $1.startsAt }
        away = touching.first?.reason
        guard let hours else {
            at = nil
            return
        }
        var start = zone.instant(day, hours.start)
        var end = zone.instant(day, hours.end)
        free = touching.reduce([DateInterval(start: start, end: end)]) { stretches, absence in
            stretches.flatMap { stretch -> [DateInterval] in
                guard absence.startsAt < stretch.end, absence.endsAt > stretch.start else { return [stretch] }
                return [(stretch.start, min(stretch.end, absence.startsAt)), (max(stretch.start, absence.endsAt), stretch.end)]
                    .filter { $0.0 < $0.1 }.map { DateInterval(start: $0.0, end: $0.1) }
            }
        }
        // What is left of the hours after each absence: the longer stretch (an absence in the middle
        // of a day leaves the longer part of it to plan).
        for absence in touching where absence.startsAt < end && absence.endsAt > start {
            let before = absence.startsAt.timeIntervalSince(start)
            let after = end.timeIntervalSince(absence.endsAt)
            if before <= 0 && after <= 0 {
                at = nil
                return
            }
            if before >= after { end = absence.startsAt } else { start = absence.endsAt }
        }
        at = DateInterval(start: start, end: end)
    }
}

/// What says when one person works over some days: their week, their dated exceptions
/// (`nil` hours: a day off) and their absences touching those days.
public struct WorkTime: Sendable, Equatable {
    public var week: WorkingWeek
    public var exceptions: [LocalDate: DayHours?]
    public var absences: [Absence]

    public init(week: WorkingWeek, exceptions: [LocalDate: DayHours?], absences: [Absence]) {
        self.week = week
        self.exceptions = exceptions
        self.absences = absences
    }

    /// Their ``WorkingDay`` on `day`, `otherwise` being the hours of someone with no week set.
    public func day(_ day: LocalDate, zone: Zone, otherwise: DayHours) -> WorkingDay {
        WorkingDay(day: day, zone: zone, week: week, exception: exceptions[day], absences: absences, otherwise: otherwise)
    }
}

/// Whether someone can take work to be done within a span of time: they work at some moment of
/// it (their ``WorkingDay``s' free stretches meet it). The rule suggestions follow, beside the
/// planner's; a task's span is ``span(of:zone:now:)``.
public enum Availability {
    /// When a task is to be done: what is left of its window; without one (or with one already
    /// over), from now until it is due, at most 7 days (the next 24 hours when it is not due or due already).
    public static func span(of task: FieldTask, now: Date) -> DateInterval {
        if let window = task.window, window.end > now { return DateInterval(start: max(window.start, now), end: window.end) }
        let until = task.dueAt.flatMap { $0 > now ? min($0, now.addingTimeInterval(7 * 86_400)) : nil } ?? now.addingTimeInterval(86_400)
        return DateInterval(start: now, end: until)
    }

    /// The days (on `zone`'s clock) `span` touches.
    public static func days(of span: DateInterval, zone: Zone) -> [LocalDate] {
        var days = [zone.date(of: span.start)]
        let last = zone.date(of: span.end.addingTimeInterval(-1))
        while let day = days.last, day < last, days.count < 9 { days.append(day.adding(days: 1)) }
        return days
    }

    /// Why someone whose days in `span` are `days` (with the absences touching them) cannot take
    /// the work, or nil when they work at some moment of it: "is away (vacation) until 2026-12-04
    /// 17:00", "does not work then".
    public static func unavailable(_ days: [WorkingDay], absences: [Absence], span: DateInterval, zone: Zone) -> String? {
        if days.flatMap(\.free).contains(where: { $0.start < span.end && $0.end > span.start }) { return nil }
        if let absence = absences.filter({ $0.startsAt < span.end && $0.endsAt > span.start }).max(by: { $0.endsAt < $1.endsAt }) {
            return "is away (\(absence.reason.rawValue)) until \(zone.format(absence.endsAt, withZone: false))"
        }
        return "does not work then"
    }
}

/// What the master knows of one team's day that planning needs: the team, its open work of
/// the day, its active members with their weeks, exceptions, absences and places, and the sites.
/// Read in a handful of queries (`CentralStore.dayFacts`); planned by `DayRequest`.
public struct DayFacts: Sendable {
    public struct Member: Sendable {
        public var person: Person
        public var week: WorkingWeek
        /// Their hours that day when they differ from the week; `.some(nil)`: a day off.
        public var exception: DayHours??
        public var absences: [Absence]
        /// Their last check-in, if any.
        public var position: (latitude: Double, longitude: Double, at: Date)?

        public init(
            person: Person, week: WorkingWeek, exception: DayHours??, absences: [Absence],
            position: (latitude: Double, longitude: Double, at: Date)?
        ) {
            self.person = person
            self.week = week
            self.exception = exception
            self.absences = absences
            self.position = position
        }
    }

    public var team: Team
    public var day: LocalDate
    public var tasks: [FieldTask]
    public var members: [Member]
    /// The tasks' sites, the depot and the members' own places, by id.
    public var sites: [Int64: Location]

    public init(team: Team, day: LocalDate, tasks: [FieldTask], members: [Member], sites: [Int64: Location]) {
        self.team = team
        self.day = day
        self.tasks = tasks
        self.members = members
        self.sites = sites
    }

    public var zone: Zone { Zone.reading(team.timeZone) }

    /// When `member` works that day, `otherwise` being the hours of someone with no week set.
    public func workingDay(_ member: Member, otherwise: DayHours) -> WorkingDay {
        WorkingDay(
            day: day, zone: zone, week: member.week, exception: member.exception, absences: member.absences,
            otherwise: otherwise)
    }
}

/// One task as a day plan leaves it: whose it is (nil: back to the team) and when work is
/// expected to start (nil: not planned). Applied only if the task is still at `version`.
public struct PlannedAssignment: Sendable, Equatable, Codable {
    public var taskID: Int64
    public var version: Int
    public var assigneeID: Int64?
    public var plannedStart: Date?

    public init(taskID: Int64, version: Int, assigneeID: Int64?, plannedStart: Date?) {
        self.taskID = taskID
        self.version = version
        self.assigneeID = assigneeID
        self.plannedStart = plannedStart
    }
}
