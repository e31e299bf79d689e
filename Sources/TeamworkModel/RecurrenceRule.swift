import Foundation

/// A recurrence rule: the documented subset of RFC 5545 RRULE that plans take
/// (docs/dispatch.md), expanded over wall-calendar days, so a plan's 08:00
/// stays 08:00 in its zone whatever the clocks do.
///
/// Parts: `FREQ` (DAILY, WEEKLY, MONTHLY, YEARLY), `INTERVAL`, `COUNT` or
/// `UNTIL` (a day, `20271231`, included), `BYDAY` (`MO`…`SU`; with an ordinal,
/// `2TU` or `-1FR`, in monthly and yearly rules), `BYMONTHDAY` (1…31 or -31…-1
/// from the month's end), `BYMONTH` (1…12). Weeks start on Monday. The start
/// day counts only when it matches the rule (as python-dateutil's `rrule`
/// does; Tests/Contract/rrules.json holds dateutil's own expansions). Anything
/// else, `BYSETPOS` included, is refused with one line naming the part.
public struct RecurrenceRule: Sendable, Hashable, CustomStringConvertible {
    public enum Frequency: String, Sendable, CaseIterable {
        case daily = "DAILY"
        case weekly = "WEEKLY"
        case monthly = "MONTHLY"
        case yearly = "YEARLY"
    }

    /// A weekday (1 = Monday … 7 = Sunday), with an ordinal within the month or year (0: every one).
    public struct Weekday: Sendable, Hashable {
        public var ordinal: Int
        public var day: Int
    }

    public var frequency: Frequency
    public var interval: Int = 1
    public var count: Int?
    public var until: LocalDate?
    public var byDay: [Weekday] = []
    public var byMonthDay: [Int] = []
    public var byMonth: [Int] = []

    static let dayNames = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]
    /// The longest rule text taken, and the most occurrences one expansion gives.
    public static let maximumLength = 256
    public static let maximumOccurrences = 5_000

    public init(parsing text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let body = trimmed.uppercased().hasPrefix("RRULE:") ? String(trimmed.dropFirst(6)) : trimmed
        guard !body.isEmpty, body.utf8.count <= Self.maximumLength else {
            throw TeamworkError.invalid("rrule must be like FREQ=MONTHLY;BYDAY=1MO (at most \(Self.maximumLength) characters)")
        }
        var frequency: Frequency?
        var seen = Set<String>()
        var rule = RecurrenceRule(frequency: .daily)
        for part in body.split(separator: ";", omittingEmptySubsequences: false) {
            let pair = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2, !pair[0].isEmpty, !pair[1].isEmpty else {
                throw TeamworkError.invalid("rrule: '\(TerminalText.inline(String(part)))' is not NAME=VALUE")
            }
            let (name, value) = (pair[0].uppercased(), pair[1].uppercased())
            guard seen.insert(name).inserted else { throw TeamworkError.invalid("rrule: \(name) is given twice") }
            func number(_ text: Substring, _ range: ClosedRange<Int>) throws -> Int {
                guard text.utf8.count <= 6, let value = Int(text), range.contains(value) else {
                    throw TeamworkError.invalid(
                        "rrule: \(name)=\(TerminalText.inline(value)) must be a number in \(range.lowerBound)…\(range.upperBound)")
                }
                return value
            }
            switch name {
            case "FREQ":
                guard let given = Frequency(rawValue: value) else {
                    throw TeamworkError.invalid(
                        "rrule: FREQ=\(TerminalText.inline(value)) is not taken; use DAILY, WEEKLY, MONTHLY or YEARLY")
                }
                frequency = given
            case "INTERVAL": rule.interval = try number(Substring(value), 1...1000)
            case "COUNT": rule.count = try number(Substring(value), 1...Self.maximumOccurrences)
            case "UNTIL":
                let digits = value.hasSuffix("Z") ? String(value.dropLast()) : value
                let day =
                    digits.count == 8 ? digits : (digits.count == 15 && digits.dropFirst(8).first == "T" ? String(digits.prefix(8)) : "")
                guard day.count == 8, day.utf8.allSatisfy({ (48...57).contains($0) }),
                    let date = LocalDate(year: Int(day.prefix(4))!, month: Int(day.dropFirst(4).prefix(2))!, day: Int(day.suffix(2))!)
                else {
                    throw TeamworkError.invalid("rrule: UNTIL must be a day like 20271231")
                }
                rule.until = date
            case "BYDAY":
                rule.byDay = try value.split(separator: ",", omittingEmptySubsequences: false).map { item in
                    let name = String(item.suffix(2))
                    guard let day = Self.dayNames.firstIndex(of: name) else {
                        throw TeamworkError.invalid(
                            "rrule: BYDAY=\(TerminalText.inline(String(item))) is not a weekday like MO, 2TU or -1FR")
                    }
                    let prefix = item.dropLast(2)
                    var ordinal = 0
                    if !prefix.isEmpty {
                        guard prefix.utf8.count <= 4, let given = Int(prefix.hasPrefix("+") ? prefix.dropFirst() : prefix),
                            given != 0, (-53...53).contains(given)
                        else {
                            throw TeamworkError.invalid(
                                "rrule: BYDAY=\(TerminalText.inline(String(item))): the ordinal must be 1…53 or -53…-1")
                        }
                        ordinal = given
                    }
                    return Weekday(ordinal: ordinal, day: day + 1)
                }
            case "BYMONTHDAY":
                rule.byMonthDay = try value.split(separator: ",", omittingEmptySubsequences: false).map { item in
                    let day = try number(item, -31...31)
                    guard day != 0 else { throw TeamworkError.invalid("rrule: BYMONTHDAY=0 is not a day of the month") }
                    return day
                }
            case "BYMONTH":
                rule.byMonth = try value.split(separator: ",", omittingEmptySubsequences: false).map { try number($0, 1...12) }
            case "WKST" where value == "MO":
                continue
            default:
                throw TeamworkError.invalid(
                    "rrule: \(TerminalText.inline(name)) is not taken here (FREQ, INTERVAL, COUNT, UNTIL, BYDAY, BYMONTHDAY, BYMONTH)")
            }
        }
        guard let frequency else { throw TeamworkError.invalid("rrule: FREQ is required (DAILY, WEEKLY, MONTHLY or YEARLY)") }
        rule.frequency = frequency
        guard rule.count == nil || rule.until == nil else { throw TeamworkError.invalid("rrule: COUNT and UNTIL cannot both be given") }
        if rule.byDay.contains(where: { $0.ordinal != 0 }) {
            guard frequency == .monthly || frequency == .yearly else {
                throw TeamworkError.invalid("rrule: BYDAY with an ordinal (2TU) is only for MONTHLY and YEARLY rules")
            }
            if frequency == .monthly || !rule.byMonth.isEmpty, rule.byDay.contains(where: { abs($0.ordinal) > 5 }) {
                throw TeamworkError.invalid("rrule: BYDAY: a month has at most 5 of a weekday")
            }
        }
        if frequency == .weekly, !rule.byMonthDay.isEmpty {
            throw TeamworkError.invalid("rrule: BYMONTHDAY is not for WEEKLY rules")
        }
        self = rule
    }

    init(frequency: Frequency) { self.frequency = frequency }

    /// The rule written back in its canonical form.
    public var description: String {
        var parts = ["FREQ=\(frequency.rawValue)"]
        if interval != 1 { parts.append("INTERVAL=\(interval)") }
        if let count { parts.append("COUNT=\(count)") }
        if let until { parts.append("UNTIL=" + until.description.replacingOccurrences(of: "-", with: "")) }
        if !byDay.isEmpty {
            parts.append(
                "BYDAY=" + byDay.map { ($0.ordinal == 0 ? "" : String($0.ordinal)) + Self.dayNames[$0.day - 1] }.joined(separator: ","))
        }
        if !byMonthDay.isEmpty { parts.append("BYMONTHDAY=" + byMonthDay.map(String.init).joined(separator: ",")) }
        if !byMonth.isEmpty { parts.append("BYMONTH=" + byMonth.map(String.init).joined(separator: ",")) }
        return parts.joined(separator: ";")
    }

    /// The days the rule gives from `start` through `last` (both included), in order; COUNT counts from `start`.
    /// With `collectingFrom`, only the days from then on are returned (and count against
    /// ``maximumOccurrences``): a plan begun years ago still reaches today.
    public func occurrences(from start: LocalDate, through last: LocalDate, collectingFrom: LocalDate? = nil) -> [LocalDate] {
        var result: [LocalDate] = []
        var emitted = 0
        let end = min(last, until ?? last)
        // Without COUNT nothing before `collectingFrom` matters: start at the period holding it
        // (a plan begun long ago costs no more than a new one).
        var period = count == nil ? firstPeriod(holding: collectingFrom, start: start) : 0
        while periodStart(period, start: start) <= end {
            guard let candidates = candidates(period: period, start: start) else { break }
            for day in candidates where day >= start {
                if day > end { return result }
                if let count, emitted >= count { return result }
                emitted += 1
                if let collectingFrom, day < collectingFrom { continue }
                result.append(day)
                if result.count >= Self.maximumOccurrences { return result }
            }
            period += 1
        }
        return result
    }

    /// The index of the period that holds `day` (0 when none is given or it is before the start).
    func firstPeriod(holding day: LocalDate?, start: LocalDate) -> Int {
        guard let day, day > start else { return 0 }
        let span: Int
        switch frequency {
        case .daily: span = day.dayNumber - start.dayNumber
        case .weekly: span = (day.dayNumber - (day.weekday - 1) - (start.dayNumber - (start.weekday - 1))) / 7
        case .monthly: span = (day.year * 12 + day.month) - (start.year * 12 + start.month)
        case .yearly: span = day.year - start.year
        }
        return max(0, span / interval)
    }

    /// The first day of the `index`-th period (a week starts on Monday); past 9999-12-31, that day.
    func periodStart(_ index: Int, start: LocalDate) -> LocalDate {
        let step = index * interval
        let last = LocalDate(year: 9999, month: 12, day: 31)!
        switch frequency {
        case .daily: return start.dayNumber + step > last.dayNumber ? last : start.adding(days: step)
        case .weekly:
            let monday = start.dayNumber + step * 7 - (start.weekday - 1)
            return monday > last.dayNumber ? last : LocalDate(dayNumber: monday)
        case .monthly:
            let months = start.year * 12 + (start.month - 1) + step
            return months / 12 > 9999 ? last : LocalDate(year: months / 12, month: months % 12 + 1, day: 1)!
        case .yearly:
            return start.year + step > 9999 ? last : LocalDate(year: start.year + step, month: 1, day: 1)!
        }
    }

    /// The matching days of the `index`-th period (day, week, month or year) after `start`'s, in order;
    /// nil past year 9999.
    func candidates(period index: Int, start: LocalDate) -> [LocalDate]? {
        let step = index * interval
        switch frequency {
        case .daily:
            let day = start.adding(days: step)
            guard day.year <= 9999 else { return nil }
            return matches(day, inMonth: true) && weekdayMatches(day, ordinals: false) ? [day] : []
        case .weekly:
            let monday = start.adding(days: step * 7 - (start.weekday - 1))
            guard monday.year <= 9999 else { return nil }
            let days = byDay.isEmpty ? [start.weekday] : byDay.map(\.day)
            return (0..<7).map { monday.adding(days: $0) }
                .filter { days.contains($0.weekday) && (byMonth.isEmpty || byMonth.contains($0.month)) }
        case .monthly:
            let months = start.year * 12 + (start.month - 1) + step
            let (year, month) = (months / 12, months % 12 + 1)
            guard year <= 9999 else { return nil }
            guard byMonth.isEmpty || byMonth.contains(month) else { return [] }
            return daysOfMonth(year: year, month: month, start: start, ordinalsInMonth: true)
        case .yearly:
            let year = start.year + step
            guard year <= 9999 else { return nil }
            if byMonth.isEmpty, !byDay.isEmpty {
                // Weekdays through the whole year; ordinals count within it; BYMONTHDAY limits.
                let first = LocalDate(year: year, month: 1, day: 1)!
                let all = (0..<(LocalDate.isLeap(year) ? 366 : 365)).map { first.adding(days: $0) }
                let byWeekday = Self.positions(all)
                return all.filter { day in
                    matches(day, inMonth: true)
                        && byDay.contains { rule in rule.day == day.weekday && Self.ordinalMatches(rule.ordinal, day: day, in: byWeekday) }
                }
            }
            let months = !byMonth.isEmpty ? byMonth.sorted() : (!byMonthDay.isEmpty ? Array(1...12) : [start.month])
            return months.flatMap { daysOfMonth(year: year, month: $0, start: start, ordinalsInMonth: true) }
        }
    }

    /// The matching days of one month: BYMONTHDAY and BYDAY (ordinals within the month) together, else the start's day.
    func daysOfMonth(year: Int, month: Int, start: LocalDate, ordinalsInMonth: Bool) -> [LocalDate] {
        let length = LocalDate.days(inMonth: month, of: year)
        let all = (1...length).map { LocalDate(year: year, month: month, day: $0)! }
        if byDay.isEmpty && byMonthDay.isEmpty {
            return all.filter { $0.day == start.day }
        }
        let byWeekday = Self.positions(all)
        return all.filter { day in
            (byMonthDay.isEmpty || byMonthDay.contains { $0 > 0 ? $0 == day.day : length + 1 + $0 == day.day })
                && (byDay.isEmpty || byDay.contains { $0.day == day.weekday && Self.ordinalMatches($0.ordinal, day: day, in: byWeekday) })
        }
    }

    /// For each day of a period, its place among the period's days of the same weekday (0-based),
    /// and how many of that weekday the period has: what an ordinal (2TU, -1FR) is checked against.
    static func positions(_ all: [LocalDate]) -> (place: [LocalDate: Int], count: [Int: Int]) {
        var place: [LocalDate: Int] = [:], count: [Int: Int] = [:]
        for day in all {
            place[day] = count[day.weekday, default: 0]
            count[day.weekday, default: 0] += 1
        }
        return (place, count)
    }

    static func ordinalMatches(_ ordinal: Int, day: LocalDate, in positions: (place: [LocalDate: Int], count: [Int: Int])) -> Bool {
        guard ordinal != 0 else { return true }
        guard let position = positions.place[day], let total = positions.count[day.weekday] else { return false }
        return ordinal > 0 ? position == ordinal - 1 : position == total + ordinal
    }

    /// For daily rules: BYMONTH and BYMONTHDAY limit.
    func matches(_ day: LocalDate, inMonth: Bool) -> Bool {
        let length = LocalDate.days(inMonth: day.month, of: day.year)
        return (byMonth.isEmpty || byMonth.contains(day.month))
            && (byMonthDay.isEmpty || byMonthDay.contains { $0 > 0 ? $0 == day.day : length + 1 + $0 == day.day })
    }

    func weekdayMatches(_ day: LocalDate, ordinals: Bool) -> Bool {
        byDay.isEmpty || byDay.contains { $0.day == day.weekday }
    }
}
