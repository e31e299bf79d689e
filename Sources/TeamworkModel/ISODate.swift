import Foundation

/// ISO 8601 dates as typed by people and written in CSV files.
///
/// Accepted: `2026-12-01` (a due date: the end of that day),
/// `2026-12-01T09:30`, `2026-12-01T09:30:00`, `2026-12-01T09:30:00.250`
/// (a wall clock in the zone given, UTC by default, when no offset is given),
/// each optionally followed by `Z` or `±HH:MM`.
public enum ISODate {
    /// A day alone is the end of that day (23:59:59) and a time without an offset is a wall
    /// clock, both in `zone` (by ``Zone``'s rule at the clock changes); `Z` or `+01:00` is taken as given.
    public static func parse(_ text: String, field: String = "date", in zone: Zone = .utc) throws -> Date {
        guard let date = parseOrNil(text.trimmingCharacters(in: .whitespaces), zone: zone) else {
            throw TeamworkError.invalid("\(field) must be an ISO 8601 date like 2026-12-01 or 2026-12-01T09:30:00Z")
        }
        return date
    }

    /// One day, `2026-12-01`, in `zone`: from its midnight to the next.
    public static func day(_ text: String, field: String = "day", in zone: Zone = .utc) throws -> DateInterval {
        zone.day(try LocalDate(parsing: text, field: field))
    }

    /// Formats a date as `2026-12-01T09:30:00Z`.
    public static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }

    private static func parseOrNil(_ text: String, zone: Zone) -> Date? {
        let chars = Array(text.utf8)
        var index = 0

        func number(_ digits: Int) -> Int? {
            guard index + digits <= chars.count else { return nil }
            var value = 0
            for offset in 0..<digits {
                let c = chars[index + offset]
                guard c >= 48, c <= 57 else { return nil }
                value = value * 10 + Int(c - 48)
            }
            index += digits
            return value
        }
        func expect(_ c: UInt8) -> Bool {
            guard index < chars.count, chars[index] == c else { return false }
            index += 1
            return true
        }

        guard let year = number(4), expect(45), let month = number(2), expect(45), let day = number(2) else { return nil }
        var components = DateComponents(calendar: calendarUTC, timeZone: .gmt, year: year, month: month, day: day)
        guard (1...12).contains(month), (1...31).contains(day) else { return nil }

        if index == chars.count {
            return LocalDate(year: year, month: month, day: day).map(zone.endOfDay)
        }
        guard expect(84) || expect(32) else { return nil }  // 'T' or ' '
        guard let hour = number(2), expect(58), let minute = number(2) else { return nil }
        var second = 0
        var nanosecond = 0
        if expect(58) {
            guard let s = number(2) else { return nil }
            second = s
            if expect(46) {
                var digits = 0
                var fraction = 0
                while index < chars.count, chars[index] >= 48, chars[index] <= 57 {
                    if digits < 9 {
                        fraction = fraction * 10 + Int(chars[index] - 48)
                        digits += 1
                    }
                    index += 1
                }
                guard digits > 0 else { return nil }
                nanosecond = fraction * Int(pow(10, Double(9 - digits)))
            }
        }
        guard hour < 24, minute < 60, second < 60 else { return nil }
        var offsetSeconds: Int?
        if index < chars.count {
            if expect(90) {  // 'Z'
                offsetSeconds = 0
            } else if chars[index] == 43 || chars[index] == 45 {  // '+' or '-'
                let sign = chars[index] == 43 ? 1 : -1
                index += 1
                guard let oh = number(2) else { return nil }
                _ = expect(58)
                guard let om = number(2), oh < 24, om < 60 else { return nil }
                offsetSeconds = sign * (oh * 3600 + om * 60)
            } else {
                return nil
            }
        }
        guard index == chars.count else { return nil }
        guard let offsetSeconds else {
            guard let date = LocalDate(year: year, month: month, day: day), let time = LocalTime(hour: hour, minute: minute, second: second)
            else {
                return nil
            }
            return zone.instant(date, time).addingTimeInterval(TimeInterval(nanosecond) / 1e9)
        }
        components.hour = hour
        components.minute = minute
        components.second = second
        components.nanosecond = nanosecond
        return validDate(components).map { $0.addingTimeInterval(TimeInterval(-offsetSeconds)) }
    }

    /// Rejects dates that do not exist (2026-02-30) instead of rolling them over.
    private static func validDate(_ components: DateComponents) -> Date? {
        guard components.isValidDate(in: calendarUTC) else { return nil }
        return calendarUTC.date(from: components)
    }

    private static let calendarUTC: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        return calendar
    }()
}
