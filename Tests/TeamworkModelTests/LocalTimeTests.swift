import Foundation
import TeamworkModel
import Testing

/// Wall clocks in a team's zone, and recurrence rules expanded over wall-calendar days.
@Suite("Local time and recurrence rules")
struct LocalTimeTests {
    static func instant(_ text: String) -> Date { try! ISODate.parse(text) }
    static func day(_ text: String) -> LocalDate { try! LocalDate(parsing: text) }

    @Test func daysCountAndWeekdaysAgreeWithTheCalendar() {
        for number in stride(
            from: LocalDate(year: 1, month: 1, day: 1)!.dayNumber, through: LocalDate(year: 9999, month: 12, day: 31)!.dayNumber, by: 997)
        {
            let date = LocalDate(dayNumber: number)
            #expect(date.dayNumber == number)
            #expect(LocalDate(year: date.year, month: date.month, day: date.day) == date)
        }
        #expect(Self.day("2026-11-25").weekday == 3, "a Wednesday")
        #expect(Self.day("1970-01-01").weekday == 4, "a Thursday")
        #expect(Self.day("2024-02-29").adding(days: 366) == Self.day("2025-03-01"))
        #expect(LocalDate(year: 2025, month: 2, day: 29) == nil)
        #expect(throws: TeamworkError.self) { try LocalDate(parsing: "2026-13-01") }
        #expect(throws: TeamworkError.self) { try LocalTime(parsing: "24:00") }
    }

    /// One written rule at the clock changes (docs/dispatch.md): a time that does not exist moves
    /// forward to the moment the clocks changed; a time that happens twice is the earlier instant.
    @Test(arguments: [
        // zone, local day and time, the instant
        ("Europe/Stockholm", "2026-12-01", "08:00", "2026-12-01T07:00:00Z"),
        ("Europe/Stockholm", "2026-07-01", "08:00", "2026-07-01T06:00:00Z"),
        ("Europe/Stockholm", "2026-03-29", "02:30", "2026-03-29T01:00:00Z"),  // skipped: 03:00 CEST
        ("Europe/Stockholm", "2026-03-29", "03:00", "2026-03-29T01:00:00Z"),
        ("Europe/Stockholm", "2026-10-25", "02:30", "2026-10-25T00:30:00Z"),  // twice: the CEST one
        ("Europe/Stockholm", "2026-10-25", "03:00", "2026-10-25T02:00:00Z"),
        ("America/Los_Angeles", "2026-03-08", "02:15", "2026-03-08T10:00:00Z"),  // skipped: 03:00 PDT
        ("America/Los_Angeles", "2026-11-01", "01:30", "2026-11-01T08:30:00Z"),  // twice: the PDT one
        ("America/Los_Angeles", "2026-12-01", "08:00", "2026-12-01T16:00:00Z"),
        ("Pacific/Auckland", "2026-09-27", "02:30", "2026-09-26T14:00:00Z"),  // skipped: 03:00 NZDT
        ("Pacific/Auckland", "2026-04-05", "02:30", "2026-04-04T13:30:00Z"),  // twice: the NZDT one
        ("Pacific/Auckland", "2026-12-01", "08:00", "2026-11-30T19:00:00Z"),
        ("UTC", "2026-12-01", "08:00", "2026-12-01T08:00:00Z"),
    ])
    func aWallClockTimeBecomesOneInstantByTheWrittenRule(zone: String, day: String, time: String, expected: String) throws {
        let zone = try Zone(zone)
        let instant = zone.instant(Self.day(day), try LocalTime(parsing: time))
        #expect(instant == Self.instant(expected), "\(zone) \(day) \(time) → \(ISODate.format(instant))")
    }

    @Test func aDayIsItsZonesDayWith23Or25HoursWhenTheClocksChange() throws {
        let stockholm = try Zone("Europe/Stockholm")
        #expect(stockholm.day(Self.day("2026-03-29")).duration == 23 * 3600)
        #expect(stockholm.day(Self.day("2026-10-25")).duration == 25 * 3600)
        #expect(stockholm.endOfDay(Self.day("2026-12-01")) == Self.instant("2026-12-01T22:59:59Z"))
        let auckland = try Zone("Pacific/Auckland")
        // 23:30 UTC on 1 December is already 2 December in Auckland, still 1 December in Los Angeles.
        #expect(auckland.date(of: Self.instant("2026-12-01T23:30:00Z")) == Self.day("2026-12-02"))
        #expect(try Zone("America/Los_Angeles").date(of: Self.instant("2026-12-01T23:30:00Z")) == Self.day("2026-12-01"))
        #expect(stockholm.format(Self.instant("2026-07-01T06:00:00Z")) == "2026-07-01 08:00 CEST")
        #expect(stockholm.format(Self.instant("2026-12-01T07:00:00Z")) == "2026-12-01 08:00 CET")
        #expect(Zone.utc.format(Self.instant("2026-12-01T07:00:00Z")) == "2026-12-01 07:00 UTC")
    }

    /// Zone names are checked against the tz database itself (seen failing before: `Asia/Kolkata`,
    /// India's canonical name, was refused because Foundation's ICU list carries only `Asia/Calcutta`).
    @Test func everyZoneOfTheSystemsZone1970TabAndItsAliasesAreAccepted() throws {
        let table = try String(contentsOfFile: "/usr/share/zoneinfo/zone1970.tab", encoding: .utf8)
        let names = table.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { line in
            line.split(separator: "\t").dropFirst(2).first.map(String.init)
        }
        #expect(names.count > 300)
        var refused: [String] = []
        for name in names + ["Asia/Kolkata", "Asia/Calcutta", "UTC", "Etc/UTC", "America/Argentina/Buenos_Aires", "US/Eastern"] {
            guard let zone = try? Zone(name) else {
                refused.append(name)
                continue
            }
            #expect(zone.name == name)
        }
        #expect(refused.isEmpty, "refused: \(refused)")
        let kolkata = try Zone("Asia/Kolkata")
        #expect(kolkata.time(of: Self.instant("2026-12-01T06:30:00Z")).description.hasPrefix("12:00"), "India is UTC+05:30")
    }

    @Test(arguments: [
        "Mars/Olympus", "", "Europe/Stockholm\n", "../../etc/passwd", String(repeating: "A", count: 100),
        "Europe/../Europe/Stockholm", "/usr/share/zoneinfo/UTC", "zone1970.tab", "Europe", "Europe/",
        "localtime", "posixrules", "Factory", "right/Europe/Stockholm", "posix/Europe/Stockholm",
    ])
    func anUnknownZoneIsRefusedInOneLine(name: String) {
        #expect(throws: TeamworkError.self) { try Zone(name) }
    }

    /// A zone found once is remembered (the board asks for each task's); what is remembered answers as
    /// the first look did: the same zone for the same name, the name trimmed for one with blanks around
    /// it, and a name that is not a zone refused every time.
    @Test func aZoneAskedAgainIsTheSameAndARefusedNameStaysRefused() throws {
        for _ in 0..<3 {
            let asked = try Zone("Europe/Vienna"), padded = try Zone("  Europe/Vienna ")
            #expect(asked == padded && asked.name == "Europe/Vienna" && asked.timeZone.identifier == "Europe/Vienna")
            #expect(throws: TeamworkError.self) { try Zone("Europe/Vienna\n") }
            #expect(throws: TeamworkError.self) { try Zone("Europe/Viena") }
            #expect(Zone.reading("Europe/Viena") == .utc)
        }
    }

    struct Golden: Decodable {
        struct Case: Decodable {
            var rule: String
            var start: String
            var through: String
            var days: [String]
        }
        var dateutil: String
        var cases: [Case]
    }

    /// Tests/Contract/rrules.json: 400 rules expanded once by python-dateutil (scripts/rrule-golden).
    @Test func everyRuleOfTheGoldenFileGivesTheDaysDateutilGives() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "../Contract/rrules.json")
        let golden = try JSONDecoder().decode(Golden.self, from: Data(contentsOf: file))
        #expect(golden.cases.count >= 300)
        var failures = 0
        for item in golden.cases {
            let rule = try RecurrenceRule(parsing: item.rule)
            let days = rule.occurrences(from: Self.day(item.start), through: Self.day(item.through)).map(\.description)
            if days != item.days {
                failures += 1
                if failures <= 5 {
                    Issue.record(
                        "\(item.rule) from \(item.start): \(days.prefix(8)) … (\(days.count)) where dateutil \(golden.dateutil) gives \(item.days.prefix(8)) … (\(item.days.count))"
                    )
                }
            }
            // The canonical text reads back as the same rule.
            #expect(try RecurrenceRule(parsing: rule.description) == rule)
        }
        #expect(failures == 0, "\(failures) of \(golden.cases.count) rules differ from dateutil")
    }

    @Test(arguments: [
        ("FREQ=HOURLY", "FREQ=HOURLY"),
        ("FREQ=MONTHLY;BYSETPOS=-1;BYDAY=MO,TU,WE,TH,FR", "BYSETPOS"),
        ("FREQ=WEEKLY;BYDAY=2MO", "ordinal"),
        ("FREQ=MONTHLY;BYDAY=6MO", "at most 5"),
        ("FREQ=MONTHLY;COUNT=3;UNTIL=20270101", "COUNT and UNTIL"),
        ("FREQ=MONTHLY;BYMONTHDAY=0", "BYMONTHDAY=0"),
        ("FREQ=MONTHLY;BYMONTH=13", "BYMONTH=13"),
        ("BYDAY=MO", "FREQ is required"),
        ("FREQ=DAILY;FREQ=WEEKLY", "twice"),
        ("FREQ=DAILY;BYHOUR=8", "BYHOUR"),
        ("FREQ=DAILY;INTERVAL=0", "INTERVAL=0"),
        ("FREQ=DAILY;UNTIL=2027", "UNTIL"),
        ("FREQ=DAILY;X", "NAME=VALUE"),
    ])
    func aRuleOutsideTheSubsetIsRefusedNamingThePart(rule: String, named: String) {
        do {
            _ = try RecurrenceRule(parsing: rule)
            Issue.record("\(rule) was taken")
        } catch {
            let message = "\(error)"
            #expect(message.contains(named) && !message.contains("\n"), "\(rule): \(message)")
        }
    }

    @Test func aDailyRuleBegunLongAgoStillReachesToday() throws {
        let daily = try RecurrenceRule(parsing: "FREQ=DAILY")
        let days = daily.occurrences(from: Self.day("2000-01-01"), through: Self.day("2026-12-31"), collectingFrom: Self.day("2026-12-01"))
        #expect(days.first == Self.day("2026-12-01") && days.count == 31, "more than 5,000 days after its start")
        let counted = try RecurrenceRule(parsing: "FREQ=DAILY;COUNT=10")
        #expect(
            counted.occurrences(from: Self.day("2026-12-01"), through: Self.day("2026-12-31"), collectingFrom: Self.day("2026-12-08"))
                == [Self.day("2026-12-08"), Self.day("2026-12-09"), Self.day("2026-12-10")], "COUNT still counts from the start")
    }

    @Test func aRuleThatNeverMatchesEndsAtItsLastDayWithNothing() throws {
        let never = try RecurrenceRule(parsing: "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=31")
        #expect(never.occurrences(from: Self.day("2026-01-01"), through: Self.day("2126-01-01")).isEmpty)
        let weekly = try RecurrenceRule(parsing: "FREQ=WEEKLY;BYDAY=MO")
        #expect(
            weekly.occurrences(from: Self.day("2026-01-01"), through: Self.day("9999-12-31")).count == RecurrenceRule.maximumOccurrences)
    }

    /// A plan's occurrences keep their wall-clock time across both clock changes, by the one rule.
    @Test(arguments: [
        // zone, rule, start, window start, the occurrences' instants
        (
            "America/Los_Angeles", "FREQ=WEEKLY;BYDAY=SU", "2026-03-01", "02:30",
            ["2026-03-01T10:30:00Z", "2026-03-08T10:00:00Z", "2026-03-15T09:30:00Z"]
        ),  // the 8th's 02:30 does not exist: 03:00 PDT
        (
            "America/Los_Angeles", "FREQ=WEEKLY;BYDAY=SU", "2026-10-25", "01:30",
            ["2026-10-25T08:30:00Z", "2026-11-01T08:30:00Z", "2026-11-08T09:30:00Z"]
        ),  // the 1st's 01:30 happens twice: PDT
        (
            "Pacific/Auckland", "FREQ=DAILY", "2026-04-04", "02:30",
            ["2026-04-03T13:30:00Z", "2026-04-04T13:30:00Z", "2026-04-05T14:30:00Z"]
        ),  // twice on the 5th: NZDT
        (
            "Pacific/Auckland", "FREQ=DAILY", "2026-09-26", "02:30",
            ["2026-09-25T14:30:00Z", "2026-09-26T14:00:00Z", "2026-09-27T13:30:00Z"]
        ),  // none on the 27th: 03:00 NZDT
        (
            "Europe/Stockholm", "FREQ=MONTHLY;BYDAY=-1SU", "2026-02-01", "08:00",
            ["2026-02-22T07:00:00Z", "2026-03-29T06:00:00Z", "2026-04-26T06:00:00Z"]
        ),
    ])
    func aPlansOccurrencesKeepTheirWallClockAcrossTheClockChanges(
        zone: String, rule: String, start: String, at: String,
        expected: [String]
    ) throws {
        let plan = Plan(
            id: 1, title: "t", description: "", priority: .normal, teamID: 1, assigneeID: nil, locationID: nil,
            requiredSkills: [], rule: rule, startsOn: Self.day(start), windowStart: try LocalTime(parsing: at),
            durationMinutes: 60, dueDays: 0, horizonDays: 30, pausedAt: nil, createdAt: Date(), updatedAt: Date(),
            version: 1, timeZone: zone, exceptions: [])
        let occurrences = try plan.occurrences(from: Self.day(start), through: Self.day(start).adding(days: 90)).prefix(3)
        #expect(occurrences.map { ISODate.format($0.window.start) } == expected, "\(zone) \(rule)")
    }

    /// A day moved into the range counts, by the day it happens; one moved out does not.
    @Test func aPlansMovedDayCountsOnTheDayItHappens() throws {
        let plan = Plan(
            id: 1, title: "t", description: "", priority: .normal, teamID: 1, assigneeID: nil, locationID: nil,
            requiredSkills: [], rule: "FREQ=WEEKLY;BYDAY=MO", startsOn: Self.day("2026-11-02"),
            windowStart: LocalTime(hour: 8, minute: 0)!, durationMinutes: 60, dueDays: 0, horizonDays: 30,
            pausedAt: nil, createdAt: Date(), updatedAt: Date(), version: 1, timeZone: "UTC",
            exceptions: [
                .init(occursOn: Self.day("2026-11-23"), movedTo: Self.day("2026-11-26")),
                .init(occursOn: Self.day("2026-11-30"), movedTo: Self.day("2026-12-20")),
                .init(occursOn: Self.day("2026-12-07"), movedTo: nil),
            ])
        let made = try plan.occurrences(from: Self.day("2026-11-25"), through: Self.day("2026-12-14"))
        #expect(
            made.map { "\($0.day)→\($0.on)" } == ["2026-11-23→2026-11-26", "2026-12-14→2026-12-14"],
            "Monday the 23rd (before the range) moved to the 26th counts; the 30th moved out and the skipped 7th do not")
    }

    /// A rule of many ordinals begun long ago costs no more than a new one (seen before: every pass
    /// expanded from the start, about 2,000 years of 365-day scans for a rule begun in year 1).
    @Test(.timeLimit(.minutes(1)))
    func aHeavyRuleBegunLongAgoIsExpandedFromTheDayAsked() throws {
        let days = (1...5).flatMap { n in ["MO", "TU", "WE", "TH", "FR", "SA", "SU"].map { "\(n)\($0)" } }
        let rule = try RecurrenceRule(parsing: "FREQ=YEARLY;BYMONTH=1,2,3,4,5,6,7,8,9,10,11,12;BYDAY=" + days.joined(separator: ","))
        let year = rule.occurrences(from: Self.day("0001-01-01"), through: Self.day("9000-12-31"), collectingFrom: Self.day("8999-01-01"))
        #expect(year.first == Self.day("8999-01-01") && year.count > 700)
    }
}
