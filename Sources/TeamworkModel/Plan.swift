import Foundation

/// Recurring work: a task for each day a rule gives, at a wall-clock time in
/// the plan's zone (docs/dispatch.md, "Recurring work").
public struct Plan: Sendable, Codable, Equatable, Identifiable {
    public var id: Int64
    public var title: String
    public var description: String
    public var priority: Priority
    public var teamID: Int64?
    public var assigneeID: Int64?
    public var locationID: Int64?
    public var requiredSkills: [String]
    /// The recurrence rule, canonical (``RecurrenceRule``).
    public var rule: String
    public var startsOn: LocalDate
    /// When each occurrence's window starts, on the plan's wall clock.
    public var windowStart: LocalTime
    public var durationMinutes: Int
    /// Each occurrence is due at the end of its day plus this many days.
    public var dueDays: Int
    /// How many days ahead occurrences are made.
    public var horizonDays: Int
    public var pausedAt: Date?
    public var createdAt: Date
    public var updatedAt: Date
    public var version: Int
    /// The zone its occurrences are made in: its location's, else its team's, else its assignee's.
    public var timeZone: String
    /// Days skipped (`movedTo` nil) or moved.
    public var exceptions: [Exception]
    /// The checklist its occurrences carry, by name (each gets the version published when it is made).
    public var checklist: String?
    /// Minutes on site of each occurrence, for the day planner (nil: the team's default).
    public var minutesOnSite: Int?

    public struct Exception: Sendable, Codable, Equatable {
        public var occursOn: LocalDate
        public var movedTo: LocalDate?

        public init(occursOn: LocalDate, movedTo: LocalDate?) {
            self.occursOn = occursOn
            self.movedTo = movedTo
        }
    }

    public init(
        id: Int64, title: String, description: String, priority: Priority, teamID: Int64?, assigneeID: Int64?,
        locationID: Int64?, requiredSkills: [String], rule: String, startsOn: LocalDate, windowStart: LocalTime,
        durationMinutes: Int, dueDays: Int, horizonDays: Int, pausedAt: Date?, createdAt: Date, updatedAt: Date,
        version: Int, timeZone: String, exceptions: [Exception], checklist: String? = nil, minutesOnSite: Int? = nil
    ) {
        self.minutesOnSite = minutesOnSite
        (self.id, self.title, self.description, self.priority) = (id, title, description, priority)
        (self.teamID, self.assigneeID, self.locationID, self.requiredSkills) = (teamID, assigneeID, locationID, requiredSkills)
        (self.rule, self.startsOn, self.windowStart, self.durationMinutes) = (rule, startsOn, windowStart, durationMinutes)
        (self.dueDays, self.horizonDays, self.pausedAt) = (dueDays, horizonDays, pausedAt)
        (self.createdAt, self.updatedAt, self.version, self.timeZone, self.exceptions) = (
            createdAt, updatedAt, version, timeZone, exceptions
        )
        self.checklist = checklist
    }

    public var zone: Zone { Zone.reading(timeZone) }

    /// One occurrence: the rule's day (`day`, its key) and the day it happens (`on`: moved, or the same).
    public struct Occurrence: Sendable, Equatable, Codable {
        public var day: LocalDate
        public var on: LocalDate
        public var window: TimeWindow
        public var due: Date
    }

    /// The occurrences that happen from `from` through `through` (by the day they happen: a day moved
    /// into the range counts, one moved out does not), skipped days left out, in order.
    public func occurrences(from: LocalDate, through: LocalDate) throws -> [Occurrence] {
        let rule = try RecurrenceRule(parsing: self.rule)
        let zone = try checkedZone()
        let changed = Dictionary(exceptions.map { ($0.occursOn, $0.movedTo) }) { first, _ in first }
        var happening = rule.occurrences(from: startsOn, through: through, collectingFrom: from)
            .filter { changed[$0] == nil }.map { (day: $0, on: $0) }
        happening += exceptions.compactMap { exception in
            exception.movedTo.flatMap { $0 >= from && $0 <= through ? (day: exception.occursOn, on: $0) : nil }
        }
        return try happening.sorted { ($0.on, $0.day) < ($1.on, $1.day) }.map { (day, on) in
            let start = zone.instant(on, windowStart)
            return Occurrence(
                day: day, on: on,
                window: try TimeWindow(start: start, end: start.addingTimeInterval(Double(durationMinutes) * 60)),
                due: zone.endOfDay(on.adding(days: dueDays)))
        }
    }

    /// Its zone; an error naming it when this machine's tz database does not know it.
    public func checkedZone() throws -> Zone {
        do { return try Zone(timeZone) } catch {
            throw TeamworkError.invalid("plan \(id): the time zone \(timeZone) is not known here (is tzdata current?)")
        }
    }
}

/// A plan to create, checked on construction.
public struct NewPlan: Sendable, Equatable {
    public var title: String
    public var description: String
    public var priority: Priority
    public var assignment: Assignment
    public var locationID: Int64?
    public var requiredSkills: [String]
    public var rule: String
    public var startsOn: LocalDate
    public var windowStart: LocalTime
    public var durationMinutes: Int
    public var dueDays: Int
    public var horizonDays: Int
    public var checklist: String?
    /// Minutes on site of each occurrence (nil: the team's default).
    public var minutesOnSite: Int?

    public init(
        title: String, description: String = "", priority: Priority = .normal, assignment: Assignment,
        locationID: Int64? = nil, requiredSkills: [String] = [], rule: String, startsOn: LocalDate,
        windowStart: LocalTime, durationMinutes: Int, dueDays: Int = 0, horizonDays: Int = 30,
        checklist: String? = nil, minutesOnSite: Int? = nil
    ) throws {
        self.checklist = checklist
        self.minutesOnSite = try minutesOnSite.map(Validate.durationMinutes)
        self.title = try Validate.name(title, field: "title")
        self.description = description
        self.priority = priority
        self.assignment = assignment
        self.locationID = locationID
        self.requiredSkills = requiredSkills
        self.rule = try RecurrenceRule(parsing: rule).description
        guard startsOn.year >= 1970 && startsOn.year <= 9000 else { throw TeamworkError.invalid("start must be a day from 1970 to 9000") }
        self.startsOn = startsOn
        self.windowStart = windowStart
        guard (1...44_640).contains(durationMinutes) else { throw TeamworkError.invalid("duration: 1 minute to 31 days") }
        guard (0...365).contains(dueDays) else { throw TeamworkError.invalid("due-days: 0 to 365") }
        guard (1...366).contains(horizonDays) else { throw TeamworkError.invalid("horizon: 1 to 366 days") }
        (self.durationMinutes, self.dueDays, self.horizonDays) = (durationMinutes, dueDays, horizonDays)
    }

    /// An ISO 8601 duration of whole minutes: `PT2H`, `PT90M`, `P1D`.
    public static func minutes(_ text: String, field: String = "duration") throws -> Int {
        let seconds = try TimeWindow.duration(text, field: field)
        guard seconds >= 60, seconds.truncatingRemainder(dividingBy: 60) == 0, seconds <= 44_640 * 60 else {
            throw TeamworkError.invalid("\(field) must be whole minutes, 1 minute to 31 days: PT2H, PT90M, P1D")
        }
        return Int(seconds / 60)
    }
}

/// What one generation pass did for one plan.
public struct PlanGeneration: Sendable, Codable, Equatable {
    public var planID: Int64
    public var title: String
    /// Tasks made now (0 when every occurrence in the horizon existed).
    public var made: Int
    /// Why nothing was made (the assignee lacks a skill or has left): the other plans went on.
    public var error: String?

    public init(planID: Int64, title: String, made: Int, error: String?) {
        (self.planID, self.title, self.made, self.error) = (planID, title, made, error)
    }
}
