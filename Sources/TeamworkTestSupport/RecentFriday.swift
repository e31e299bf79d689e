import Foundation
import TeamworkModel

/// A working day in the recent past for tests that enter time through the tools: a worker's entry
/// begins at most ``TimeOnJob/recentDays`` days before the service receives it, so a fixed date
/// would stop being one as the calendar moves on. The Friday 3 to 9 days before the wall clock's
/// day (UTC): a weekday (the usual hours are expected of it), wholly in the past, its week closed.
public enum RecentFriday {
    public static let day: LocalDate = {
        var day = Zone.utc.date(of: Date()).adding(days: -3)
        while day.weekday != 5 { day = day.adding(days: -1) }
        return day
    }()

    /// The day after it.
    public static var next: LocalDate { day.adding(days: 1) }

    /// Its ISO week, like `2026-W47`.
    public static var week: String {
        var calendar = Calendar(identifier: .iso8601)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let noon = Zone.utc.instant(day, try! LocalTime(parsing: "12:00"))
        let parts = calendar.dateComponents([.yearForWeekOfYear, .weekOfYear], from: noon)
        return String(format: "%04d-W%02d", parts.yearForWeekOfYear!, parts.weekOfYear!)
    }
}
