import Foundation
import TeamworkModel
import Testing

@Suite("Dispatch rules: skills, windows, distances, who should go")
struct DispatchRulesTests {
    // MARK: Skills and windows as typed

    @Test func skillsAreTrimmedLowercasedDeduplicatedAndSorted() throws {
        #expect(try Skills.parse(" Electrical, climbing;electrical ,", most: 8, field: "s") == ["climbing", "electrical"])
        #expect(try Skills.parse("", most: 8, field: "s") == [])
    }

    @Test(arguments: ["elec trical", "-x", "x-", "ümlaut", String(repeating: "a", count: 33), "a,b,c"])
    func badSkillListsAreRefused(_ text: String) {
        #expect(throws: TeamworkError.self) { try Skills.parse(text, most: 2, field: "skills") }
    }

    @Test func aWindowParsesAsAnIntervalOrAStartAndADuration() throws {
        let a = try TimeWindow.parse("2026-12-01T09:00Z/2026-12-01T12:00Z")
        let b = try TimeWindow.parse("2026-12-01T09:00:00Z/PT3H")
        #expect(a == b)
        #expect(a.compact(withZone: false) == "2026-12-01 09:00-12:00")
        #expect(a.compact() == "2026-12-01 09:00-12:00 UTC")
        #expect(try TimeWindow.parse("2026-12-01T22:00Z/P1DT2H").compact() == "2026-12-01 22:00-2026-12-03 00:00 UTC")
        // Without an offset, on the wall clock of the zone given; shown back on it.
        let stockholm = try Zone("Europe/Stockholm")
        let local = try TimeWindow.parse("2026-12-01T09:00/PT3H", in: stockholm)
        #expect(local.start == (try ISODate.parse("2026-12-01T08:00:00Z")))
        #expect(local.compact(in: stockholm) == "2026-12-01 09:00-12:00 CET")
        #expect(try TimeWindow.parse("2026-07-01T09:00/PT3H", in: stockholm).compact(in: stockholm) == "2026-07-01 09:00-12:00 CEST")
        #expect(
            try ISODate.parse("2026-12-01", in: stockholm) == (try ISODate.parse("2026-12-01T22:59:59Z")),
            "a due day ends at its local midnight")
    }

    @Test(arguments: [
        "2026-12-01T09:00Z", "2026-12-01T12:00Z/2026-12-01T09:00Z", "2026-12-01T09:00Z/PT", "x/y",
        "2026-12-01T09:00Z/P40D", "2026-12-01T09:00Z/PT3X",
    ])
    func badWindowsAreRefused(_ text: String) {
        #expect(throws: TeamworkError.self) { try TimeWindow.parse(text) }
    }

    @Test func aDayRunsFromMidnightToMidnightUTC() throws {
        let day = try ISODate.day("2026-12-01")
        #expect(ISODate.format(day.start) == "2026-12-01T00:00:00Z")
        #expect(ISODate.format(day.end) == "2026-12-02T00:00:00Z")
        #expect(throws: TeamworkError.self) { try ISODate.day("2026-12-01T10:00Z") }
    }

    @Test func greatCircleDistancesMatchKnownOnes() {
        // Stockholm Central to Uppsala Central: about 64 km as the crow flies.
        let d = GreatCircle.meters(fromLatitude: 59.3300, longitude: 18.0580, toLatitude: 59.8586, longitude: 17.6450)
        #expect(abs(d - 63_800) < 1_500)
        // A quarter of the equator.
        let q = GreatCircle.meters(fromLatitude: 0, longitude: 0, toLatitude: 0, longitude: 90)
        #expect(abs(q - 10_007_557) < 100)
    }

    // MARK: Who should go

    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let site = (latitude: 59.33, longitude: 18.06)

    static func task(requires: [String] = [], window: TimeWindow? = nil) -> FieldTask {
        FieldTask(
            id: 1, title: "Fix", description: "", priority: .normal, status: .open, teamID: 1, assigneeID: nil,
            locationID: 1, dueAt: nil, createdBy: nil, createdAt: now, updatedAt: now, startedAt: nil,
            completedAt: nil, completedBy: nil, completionNote: nil, version: 1, requiredSkills: requires, window: window)
    }

    static func person(_ id: Int64, skills: [String] = []) -> Person {
        Person(
            id: id, firstName: "P\(id)", lastName: "X", email: "p\(id)@x.org", role: .worker, createdAt: now,
            updatedAt: now, skills: skills)
    }

    /// Someone `km` east of the site (along the parallel), holding `open` tasks.
    static func input(
        _ id: Int64, km: Double?, open: [Priority] = [], skills: [String] = [], clashes: Int = 0,
        reportedAgo: TimeInterval = 600
    ) -> Ranking.Input {
        let position = km.map { km in
            (
                latitude: site.latitude, longitude: site.longitude + km / (111.32 * cos(site.latitude * .pi / 180)),
                reportedAt: now.addingTimeInterval(-reportedAgo)
            )
        }
        return Ranking.Input(person: person(id, skills: skills), position: position, openPriorities: open, windowClashes: clashes)
    }

    static func rank(_ people: [Ranking.Input], task: FieldTask = task()) -> [Int64] {
        Ranking(task: task, site: site, people: people, now: now).candidates.map(\.personID)
    }

    @Test func atEqualLoadTheNearerPersonWins() {
        #expect(Self.rank([Self.input(1, km: 8, open: [.normal]), Self.input(2, km: 2, open: [.normal])]) == [2, 1])
    }

    @Test func atEqualDistanceTheLighterLoadWins() {
        #expect(Self.rank([Self.input(1, km: 3, open: [.normal, .normal]), Self.input(2, km: 3, open: [.normal])]) == [2, 1])
        // An urgent task held weighs more than a low one.
        #expect(Self.rank([Self.input(1, km: 3, open: [.urgent]), Self.input(2, km: 3, open: [.low])]) == [2, 1])
    }

    @Test func fiveKilometresWeighAsMuchAsOneNormalTask() {
        // 1 km with two tasks (cost 11) loses to 9 km with none (cost 9), wins against 12 km with none.
        #expect(Self.rank([Self.input(1, km: 1, open: [.normal, .normal]), Self.input(2, km: 9)]) == [2, 1])
        #expect(Self.rank([Self.input(1, km: 1, open: [.normal, .normal]), Self.input(2, km: 12)]) == [1, 2])
    }

    @Test func someoneWithoutARequiredSkillIsExcludedAndToldWhy() {
        let ranking = Ranking(
            task: Self.task(requires: ["climbing", "electrical"]), site: Self.site,
            people: [
                Self.input(1, km: 1, skills: ["electrical"]), Self.input(2, km: 20, skills: ["climbing", "electrical", "welding"]),
            ], now: Self.now)
        #expect(ranking.candidates.map(\.personID) == [2])
        #expect(ranking.excluded.map(\.personID) == [1])
        #expect(ranking.excluded.first?.reason == "lacks climbing")
        #expect(ranking.candidates.first?.reasons.last == "has climbing, electrical")
    }

    /// Seen before: anyone with a check-in ranked above anyone without, so a worker holding seven
    /// tasks, one in the same window, outranked an idle one whose phone had not checked in.
    @Test func someoneWithNoKnownPositionCountsAsFifteenKilometresAway() {
        let busy = Self.input(2, km: 1, open: Array(repeating: .normal, count: 7), clashes: 1)
        #expect(Self.rank([busy, Self.input(1, km: nil)]) == [1, 2], "the idle one first")
        #expect(Self.rank([Self.input(1, km: nil), Self.input(2, km: 14)]) == [2, 1], "14 km known beats unknown")
        #expect(Self.rank([Self.input(1, km: nil), Self.input(2, km: 16)]) == [1, 2], "16 km known loses to unknown")
        let ranking = Ranking(task: Self.task(), site: Self.site, people: [Self.input(1, km: nil)], now: Self.now)
        #expect(ranking.candidates.first?.reasons.first == "position unknown (counted as 15 km)")
    }

    @Test func overlappingWindowsOfOnePersonAreDoubleBookedTouchingOnesAreNot() throws {
        func task(_ id: Int64, _ from: Double, _ to: Double, _ status: TaskStatus = .assigned) throws -> FieldTask {
            var task = Self.task()
            task.id = id
            task.status = status
            task.window = try TimeWindow(start: Self.now.addingTimeInterval(from * 3600), end: Self.now.addingTimeInterval(to * 3600))
            return task
        }
        func booked(_ tasks: [FieldTask]) -> Set<Int64> { FieldTask.doubleBooked(tasks) { _ in 45 } }
        #expect(booked([try task(1, 0, 2), try task(2, 1, 3), try task(3, 3, 4)]) == [1, 2], "touching is not overlapping")
        #expect(booked([try task(1, 0, 5), try task(2, 1, 2), try task(3, 3, 4)]) == [1, 2, 3])
        #expect(booked([try task(1, 0, 2), try task(2, 1, 3, .completed)]).isEmpty, "done work books nothing")
    }

    /// Seen on main: once a plan was applied, consecutive visits whose windows overlap were all
    /// flagged "double-booked", though the plan put them one after the other. A double booking is
    /// two planned visits that overlap (expected start plus minutes on site), overlapping windows of
    /// work not yet planned, or a planned visit that leaves no room in an unplanned one's window.
    @Test func visitsPlannedOneAfterTheOtherInOverlappingWindowsAreNotDoubleBooked() throws {
        func task(_ id: Int64, window: (Double, Double)?, planned: Double? = nil) throws -> FieldTask {
            var task = Self.task()
            task.id = id
            task.status = .assigned
            task.window = try window.map {
                try TimeWindow(start: Self.now.addingTimeInterval($0.0 * 3600), end: Self.now.addingTimeInterval($0.1 * 3600))
            }
            task.plannedStart = planned.map { Self.now.addingTimeInterval($0 * 3600) }
            return task
        }
        func booked(_ tasks: [FieldTask]) -> Set<Int64> { FieldTask.doubleBooked(tasks) { _ in 45 } }
        // Three visits in one 08:00-12:00 window, planned at 8:00, 9:00 and 10:00 (45 minutes each).
        let planned = [
            try task(1, window: (0, 4), planned: 0), try task(2, window: (0, 4), planned: 1), try task(3, window: (0, 4), planned: 2),
        ]
        #expect(booked(planned).isEmpty)
        // Planned 30 minutes apart, 45 minutes each: they overlap.
        #expect(booked([try task(1, window: (0, 4), planned: 0), try task(2, window: (0, 4), planned: 0.5)]) == [1, 2])
        // An unplanned task whose window still has room beside a planned visit is not; one whose window the visit fills is.
        #expect(booked([try task(1, window: (0, 4), planned: 0), try task(2, window: (0, 2))]).isEmpty)
        #expect(booked([try task(1, window: (0, 4), planned: 0), try task(2, window: (0, 0.75))]) == [1, 2])
        // A window is when work starts: a visit until 00:15 leaves a 00:00-00:30 window room to begin after it (review).
        #expect(booked([try task(1, window: nil, planned: -0.5), try task(2, window: (0, 0.5))]).isEmpty)
        // A planned task with no window beside an unplanned one far away: nothing.
        #expect(booked([try task(1, window: nil, planned: 0), try task(2, window: (3, 4))]).isEmpty)
    }

    @Test func aTaskWithoutASiteIsRankedByLoadAlone() {
        let ranking = Ranking(
            task: Self.task(), site: nil,
            people: [
                Self.input(1, km: nil, open: [.normal]), Self.input(2, km: 1, open: [.normal, .high]), Self.input(3, km: nil),
            ], now: Self.now)
        #expect(ranking.candidates.map(\.personID) == [3, 1, 2])
        #expect(ranking.candidates.allSatisfy { $0.distanceMeters == nil })
    }

    @Test func tasksInTheSameWindowCountAgainstACandidate() {
        #expect(Self.rank([Self.input(1, km: 2, open: [.normal], clashes: 1), Self.input(2, km: 4, open: [.normal])]) == [2, 1])
    }

    @Test func tiesGoToTheFresherPositionThenTheLowerID() {
        #expect(Self.rank([Self.input(1, km: 3, reportedAgo: 7200), Self.input(2, km: 3, reportedAgo: 60)]) == [2, 1])
        #expect(Self.rank([Self.input(5, km: 3), Self.input(4, km: 3)]) == [4, 5])
    }

    @Test func reasonsSayDistancePositionAgeAndLoadInWords() throws {
        let ranking = Ranking(
            task: Self.task(requires: ["electrical"]), site: Self.site,
            people: [
                Self.input(1, km: 3.2, open: [.urgent, .normal], skills: ["electrical"], reportedAgo: 3 * 3600)
            ], now: Self.now)
        let reasons = try #require(ranking.candidates.first?.reasons)
        #expect(reasons == ["3.2 km away (position 3 h old)", "2 open tasks (1 urgent)", "has electrical"])
    }
}
