import Foundation
import Testing

@testable import TeamworkModel

/// When someone works on a day: their hours less every absence, the one rule the planner,
/// the board and suggestions read.
struct WorkingDayTests {
    let zone = try! Zone("Europe/Stockholm")
    let monday = LocalDate(year: 2026, month: 11, day: 30)!

    func absence(_ from: String, _ to: String, _ reason: AbsenceReason = .other) throws -> Absence {
        Absence(
            id: 1, personID: 1, startsAt: try ISODate.parse(from, in: zone), endsAt: try ISODate.parse(to, in: zone), reason: reason,
            note: "")
    }

    @Test func anAbsenceInTheMiddleLeavesBothStretchesFreeAndThePlannerTheLonger() throws {
        let week = try WorkingWeek(parsing: ["mon-fri 07:00-16:00"])
        let day = WorkingDay(
            day: monday, zone: zone, week: week, exception: nil, absences: [try absence("2026-11-30T09:00", "2026-11-30T10:00")],
            otherwise: .usual)
        #expect(
            day.free.map { [zone.format($0.start, withZone: false), zone.format($0.end, withZone: false)] } == [
                ["2026-11-30 07:00", "2026-11-30 09:00"], ["2026-11-30 10:00", "2026-11-30 16:00"],
            ])
        #expect(day.at == day.free.last)
        #expect(day.away == .other)
    }

    @Test func anAbsenceCoveringTheStartOrTheWholeDayLeavesWhatIsLeftOrNothing() throws {
        let week = try WorkingWeek(parsing: ["mon-fri 07:00-16:00"])
        let late = WorkingDay(
            day: monday, zone: zone, week: week, exception: nil, absences: [try absence("2026-11-29T12:00", "2026-11-30T12:00", .sick)],
            otherwise: .usual)
        #expect(late.free.map { zone.format($0.start, withZone: false) } == ["2026-11-30 12:00"])
        let gone = WorkingDay(
            day: monday, zone: zone, week: week, exception: nil,
            absences: [try absence("2026-11-29T00:00", "2026-12-05T00:00", .vacation)], otherwise: .usual)
        #expect(gone.free.isEmpty && gone.at == nil && gone.away == .vacation)
        let sunday = WorkingDay(day: monday.adding(days: 6), zone: zone, week: week, exception: nil, absences: [], otherwise: .usual)
        #expect(sunday.free.isEmpty && sunday.away == nil)
    }

    @Test func aTaskIsToBeDoneInWhatIsLeftOfItsWindowElseFromNowUntilDueAtMostAWeek() throws {
        let now = try ISODate.parse("2026-11-30T08:00:00Z")
        var task = DispatchRulesTests.task()
        #expect(Availability.span(of: task, now: now).duration == 86_400, "not due: the next 24 hours")
        task.dueAt = now.addingTimeInterval(2 * 3600)
        #expect(Availability.span(of: task, now: now).duration == 2 * 3600, "due in two hours: until then (review)")
        task.dueAt = now.addingTimeInterval(-3600)
        #expect(Availability.span(of: task, now: now).duration == 86_400, "overdue: the next 24 hours")
        task.dueAt = now.addingTimeInterval(3 * 86_400)
        #expect(Availability.span(of: task, now: now).duration == 3 * 86_400)
        task.dueAt = now.addingTimeInterval(30 * 86_400)
        #expect(Availability.span(of: task, now: now).duration == 7 * 86_400)
        task.window = try TimeWindow.parse("2026-12-02T10:00:00Z/PT2H")
        #expect(Availability.span(of: task, now: now) == DateInterval(start: task.window!.start, end: task.window!.end))
        let begun = try TimeWindow.parse("2026-11-30T06:00:00Z/PT4H")
        task.window = begun
        #expect(Availability.span(of: task, now: now) == DateInterval(start: now, end: begun.end), "a window begun: from now")
        task.window = try TimeWindow.parse("2026-12-02T10:00:00Z/PT2H")
        #expect(Availability.days(of: Availability.span(of: task, now: now), zone: .utc).map(\.description) == ["2026-12-02"])
    }
}
