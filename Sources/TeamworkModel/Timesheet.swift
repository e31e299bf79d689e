import Foundation

/// A week of time on the job per person and day (`report timesheet`), against each person's
/// working hours: what payroll reads. Minutes are the time that passed (a day the clocks change on
/// has 23 or 25 hours); an entry over midnight counts on both days, on its task's clock.
public struct Timesheet: Sendable, Codable, Equatable {
    /// `2026-W44`.
    public var week: String
    /// Its seven days, Monday first.
    public var days: [LocalDate]
    public var people: [Person]

    public struct Person: Sendable, Codable, Equatable {
        public var personID: Int64
        public var name: String
        public var days: [Day]
        /// Entries begun this week and still running (a start not yet completed): counted nowhere until they end.
        public var open: Int
        public var work: Int { days.reduce(0) { $0 + $1.work } }
        public var travel: Int { days.reduce(0) { $0 + $1.travel } }
        public var total: Int { work + travel }
        public var expected: Int { days.reduce(0) { $0 + $1.expected } }
        public var overtime: Int { days.reduce(0) { $0 + $1.overtime } }

        public init(personID: Int64, name: String, days: [Day], open: Int) {
            (self.personID, self.name, self.days, self.open) = (personID, name, days, open)
        }

        enum CodingKeys: String, CodingKey {
            case personID, name, days, open, work, travel, total, expected, overtime
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                personID: try c.decode(Int64.self, forKey: .personID), name: try c.decode(String.self, forKey: .name),
                days: try c.decode([Day].self, forKey: .days), open: try c.decode(Int.self, forKey: .open))
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(personID, forKey: .personID)
            try c.encode(name, forKey: .name)
            try c.encode(days, forKey: .days)
            try c.encode(open, forKey: .open)
            try c.encode(work, forKey: .work)
            try c.encode(travel, forKey: .travel)
            try c.encode(total, forKey: .total)
            try c.encode(expected, forKey: .expected)
            try c.encode(overtime, forKey: .overtime)
        }
    }

    /// One person's day, in whole minutes: work, travel, the working hours expected of them that
    /// day, and the overtime (what they worked and travelled beyond those hours).
    public struct Day: Sendable, Codable, Equatable {
        public var date: LocalDate
        public var work: Int
        public var travel: Int
        public var expected: Int
        public var total: Int { work + travel }
        public var overtime: Int { max(0, total - expected) }

        public init(date: LocalDate, work: Int, travel: Int, expected: Int) {
            (self.date, self.work, self.travel, self.expected) = (date, work, travel, expected)
        }
    }

    /// The last period payroll closed, if any: no time is recorded on or before its last day.
    public var closed: PayrollClose?

    public init(week: String, days: [LocalDate], people: [Person], closed: PayrollClose? = nil) {
        (self.week, self.days, self.people, self.closed) = (week, days, people, closed)
    }

    /// The Monday of ISO week `text` (`2026-W44`), or a one-line error.
    public static func monday(ofWeek text: String) throws -> LocalDate {
        let parts = text.split(separator: "-W", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 4, parts[1].count == 2, let year = Int(parts[0]), let week = Int(parts[1]),
            (2000...2100).contains(year), let january4 = LocalDate(year: year, month: 1, day: 4)
        else { throw TeamworkError.invalid("--week must be an ISO week like 2026-W44") }
        let first = january4.adding(days: 1 - january4.weekday)
        // A year has 53 weeks when it begins on a Thursday, or is a leap year beginning on a Wednesday.
        let next = LocalDate(year: year + 1, month: 1, day: 4)!
        let weeks = (next.adding(days: 1 - next.weekday).dayNumber - first.dayNumber) / 7
        guard (1...weeks).contains(week) else { throw TeamworkError.invalid("\(year) has weeks 1 to \(weeks), not \(week)") }
        return first.adding(days: (week - 1) * 7)
    }

    /// The lines payroll reads: a row per person and day (minutes), with headers.
    public var csvRows: [[String]] {
        [["person_id", "person", "date", "work_minutes", "travel_minutes", "total_minutes", "expected_minutes", "overtime_minutes"]]
            + people.flatMap { person in
                person.days.map { day in
                    [
                        String(person.personID), person.name, day.date.description, String(day.work), String(day.travel),
                        String(day.total), String(day.expected), String(day.overtime),
                    ]
                }
            }
    }
}

/// A period payroll closed (`report timesheet --close WEEK`): every day up to and including `through`
/// (the week's Sunday, on each entry's task's clock) keeps its time as it is.
public struct PayrollClose: Sendable, Codable, Equatable {
    public var week: String
    public var through: LocalDate
    /// Who closed it (their name), and when.
    public var closedBy: String?
    public var closedAt: Date

    public init(week: String, through: LocalDate, closedBy: String?, closedAt: Date) {
        (self.week, self.through, self.closedBy, self.closedAt) = (week, through, closedBy, closedAt)
    }

    /// "Payroll is closed through 2026-11-29 (week 2026-W48), by Maria Dispatcher at 2026-11-30T09:00:00Z."
    public var sentence: String {
        "Payroll is closed through \(through) (week \(week))\(closedBy.map { ", by \($0)" } ?? "") at \(TimeOnJob.instant(closedAt))."
    }
}
