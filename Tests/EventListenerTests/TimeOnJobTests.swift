import Foundation
import PostgresNIO
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// Time on the job on the master (sql/0042): the automatic entries a worker's own start and
/// completion make, what ends an open one, and the week's timesheet across a change of the clocks.
/// Every time is set: nothing here reads the wall clock's day.
@Suite("Time on the job: the master")
struct TimeOnJobTests {
    /// Stockholm, the day the clocks went back an hour (03:00 summer time became 02:00): 25 hours.
    static let zone = try! Zone("Europe/Stockholm")
    static func at(_ day: String, _ time: String) -> Date {
        zone.instant(try! LocalDate(parsing: day), try! LocalTime(parsing: time))
    }

    struct World {
        var store: CentralStore
        var fixtures: Fixtures
        var position: Int64 = 0

        func sql(_ query: PostgresQuery) async throws -> [PostgresRow] {
            try await store.connection.query(query, logger: store.logger).collect()
        }

        /// A task of team red assigned to `person`, expected in `window` (local times of `day`).
        func task(_ title: String, for person: Person, day: String, from: String, to: String) async throws -> Int64 {
            try await sql(
                """
                INSERT INTO tasks (title, team_id, assignee_id, status, window_start, window_end)
                VALUES (\(title), \(fixtures.red.id), \(person.id), 'assigned', \(TimeOnJobTests.at(day, from)),
                        \(TimeOnJobTests.at(day, to)))
                RETURNING id
                """
            ).first!.decode(Int64.self)
        }

        /// `person`'s changes, made at the times given, taken in by the listener in one batch.
        /// Received a second after each was made, unless `received` says when the batch reached the service.
        mutating func apply(
            _ person: Person, _ changes: [(String, Int64, Date, String?, String?)], received: Date? = nil
        ) async throws -> [String?] {
            var recorded: [RecordedWorkerChange] = []
            for (operation, task, made, item, value) in changes {
                position += 1
                let ms = Int64((made.timeIntervalSince1970 * 1000).rounded())
                recorded.append(
                    RecordedWorkerChange(
                        position: position, changeID: "time-\(position)", personID: person.id, taskID: task, operation: operation,
                        note: operation == "complete" ? "done" : nil, madeAt: ms,
                        receivedAt: received.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) } ?? ms + 1000, item: item,
                        value: value,
                        blob: nil, size: nil, mediaType: nil, signer: nil))
            }
            let outcome = try await store.applyFieldChanges(
                replica: "team-\(fixtures.red.id)", source: "time-test", recorded,
                cursor: ListenerCursor(position: position, changeID: "time-\(position)"))
            return outcome.map(\.conflict)
        }

        func entries(_ task: Int64) async throws -> [String] {
            try await store.timeEntries(ofTask: task).map { entry in
                let name = entry.personName?.split(separator: " ").first.map(String.init) ?? "?"
                let span = [entry.startedAt, entry.endedAt].map { $0.map { TimeOnJobTests.zone.time(of: $0).short } ?? "…" }
                return "\(name) \(entry.kind.rawValue) \(span[0])-\(span[1]) \(entry.source)"
            }
        }
    }

    static func withWorld(_ body: (inout World) async throws -> Void) async throws {
        try await TestDatabase.withFresh { url in
            try await CentralStore.withStore(url) { store in
                let fixtures = try await Fixtures.seed(store)
                _ = try await store.connection.query(
                    "UPDATE teams SET time_zone = 'Europe/Stockholm' WHERE id = \(fixtures.red.id)", logger: store.logger
                ).collect()
                var world = World(store: store, fixtures: fixtures)
                try await body(&world)
            }
        }
    }

    @Test func aWorkersStartAndCompletionKeepTheirWorkAndTheirTravelToTheNextTaskOfTheDay() async throws {
        try await Self.withWorld { world in
            let ann = world.fixtures.ann
            let day = "2026-10-26"
            let first = try await world.task("Meter", for: ann, day: day, from: "09:00", to: "10:00")
            let second = try await world.task("Boiler", for: ann, day: day, from: "11:00", to: "12:00")
            let third = try await world.task("Fuse box", for: ann, day: day, from: "13:00", to: "14:00")

            // One batch with the whole morning, as a device offline until noon sends it: applied in bulk.
            let conflicts = try await world.apply(
                ann,
                [
                    ("start", first, Self.at(day, "09:05"), nil, nil), ("complete", first, Self.at(day, "10:00"), nil, nil),
                    ("start", second, Self.at(day, "10:40"), nil, nil), ("complete", second, Self.at(day, "11:30"), nil, nil),
                ])
            #expect(conflicts == [nil, nil, nil, nil])
            #expect(try await world.entries(first) == ["ann work 09:05-10:00 auto"])
            #expect(try await world.entries(second) == ["ann travel 10:00-10:40 auto", "ann work 10:40-11:30 auto"])
            // Completing the second set her on her way to the third: travel running until she starts there.
            #expect(try await world.entries(third) == ["ann travel 11:30-… auto"])
            _ = try await world.apply(ann, [("start", third, Self.at(day, "12:10"), nil, nil)])
            #expect(try await world.entries(third) == ["ann travel 11:30-12:10 auto", "ann work 12:10-… auto"])

            // Her own travel replaces the automatic one; the completion in the same batch ends her work.
            let own = TimeOnJob.value(start: Self.at(day, "11:35"), end: Self.at(day, "12:05"))
            let taken = try await world.apply(
                ann, [("time", third, Self.at(day, "13:05"), "travel", own), ("complete", third, Self.at(day, "13:30"), nil, nil)])
            #expect(taken == [nil, nil])
            #expect(try await world.entries(third) == ["ann travel 11:35-12:05 worker", "ann work 12:10-13:30 auto"])
        }
    }

    @Test func travelThatNeverArrivedIsDroppedAndWorkStopsWhenTheTaskLeavesItsWorker() async throws {
        try await Self.withWorld { world in
            let (ann, bo) = (world.fixtures.ann, world.fixtures.bo)
            let day = "2026-10-26"
            let done = try await world.task("Meter", for: ann, day: day, from: "09:00", to: "10:00")
            let next = try await world.task("Boiler", for: ann, day: day, from: "11:00", to: "12:00")
            let elsewhere = try await world.task("Pump", for: ann, day: day, from: "15:00", to: "16:00")
            _ = try await world.apply(
                ann, [("start", done, Self.at(day, "09:00"), nil, nil), ("complete", done, Self.at(day, "10:00"), nil, nil)])
            #expect(try await world.entries(next) == ["ann travel 10:00-… auto"])

            // Given to Bo before she arrives: her travel there is dropped, not counted.
            _ = try await world.sql("UPDATE tasks SET assignee_id = \(bo.id) WHERE id = \(next)")
            #expect(try await world.entries(next) == [])

            // She starts the pump job instead; completing it sets her on her way nowhere (nothing later that day).
            _ = try await world.apply(ann, [("start", elsewhere, Self.at(day, "10:30"), nil, nil)])
            #expect(try await world.entries(elsewhere) == ["ann work 10:30-… auto"])
            // A dispatcher cancels it while she works: her running work stops then (now, not a set time: only its end is checked).
            _ = try await world.sql("UPDATE tasks SET status = 'cancelled' WHERE id = \(elsewhere)")
            let stopped = try await world.store.timeEntries(ofTask: elsewhere)
            #expect(stopped.count == 1 && stopped.first?.endedAt == nil, "begun in 2026, over a day ago: it stays open, no 24 h+ entry")
        }
    }

    @Test func travelCountsFromTheLastWorkBeforeArrivingHoweverTheChangesWereBatched() async throws {
        try await Self.withWorld { world in
            let ann = world.fixtures.ann
            let day = "2026-10-27"
            let a = try await world.task("A", for: ann, day: day, from: "08:00", to: "09:00")
            let b = try await world.task("B", for: ann, day: day, from: "11:00", to: "12:00")
            let c = try await world.task("C", for: ann, day: day, from: "13:00", to: "14:00")
            _ = try await world.apply(
                ann, [("start", a, Self.at(day, "08:00"), nil, nil), ("complete", a, Self.at(day, "10:00"), nil, nil)])
            // On her way to B she does C first, sent as one batch (its start folded into its completion).
            _ = try await world.apply(
                ann, [("start", c, Self.at(day, "10:30"), nil, nil), ("complete", c, Self.at(day, "12:00"), nil, nil)])
            _ = try await world.apply(ann, [("start", b, Self.at(day, "12:30"), nil, nil)])
            #expect(try await world.entries(b) == ["ann travel 12:00-12:30 auto", "ann work 12:30-… auto"])
            #expect(try await world.entries(c) == ["ann work 10:30-12:00 auto"])
        }
    }

    @Test func aReopenedTaskDoneAgainCountsItsWorkOnceAndTheTravelAfterTheLastCompletion() async throws {
        try await Self.withWorld { world in
            let ann = world.fixtures.ann
            let day = "2026-10-28"
            let a = try await world.task("A", for: ann, day: day, from: "08:00", to: "09:00")
            let b = try await world.task("B", for: ann, day: day, from: "11:00", to: "12:00")
            _ = try await world.apply(
                ann, [("start", a, Self.at(day, "08:00"), nil, nil), ("complete", a, Self.at(day, "09:00"), nil, nil)])
            #expect(try await world.entries(b) == ["ann travel 09:00-… auto"])
            // A bolt is missing: she reopens it at 09:10 and finishes at 10:00.
            _ = try await world.apply(ann, [("reopen", a, Self.at(day, "09:10"), nil, nil)])
            #expect(try await world.entries(a) == ["ann work 08:00-… auto"])
            #expect(try await world.entries(b) == [], "she is back at A: the travel to B is dropped")
            _ = try await world.apply(ann, [("complete", a, Self.at(day, "10:00"), nil, nil)])
            _ = try await world.apply(ann, [("start", b, Self.at(day, "10:30"), nil, nil)])
            #expect(try await world.entries(a) == ["ann work 08:00-10:00 auto"])
            #expect(try await world.entries(b) == ["ann travel 10:00-10:30 auto", "ann work 10:30-… auto"])
        }
    }

    @Test func aCancellationStopsItsAssigneesRunningWork() async throws {
        try await Self.withWorld { world in
            let ann = world.fixtures.ann
            let task = try await world.task("Leak", for: ann, day: "2026-10-26", from: "08:00", to: "09:00")
            // Started ten minutes before the database's clock (the rule is "work stops now": only the span
            // from the start to the cancellation is read, so it holds at any hour and on any day).
            _ = try await world.apply(ann, [("start", task, Date().addingTimeInterval(-600), nil, nil)])
            _ = try await world.sql("UPDATE tasks SET status = 'cancelled' WHERE id = \(task)")
            let entries = try await world.store.timeEntries(ofTask: task)
            #expect(entries.count == 1 && entries[0].endedAt != nil && (9...11).contains(entries[0].minutes ?? -1), "\(entries)")
            // Time on a cancelled task was worked all the same: a manager corrects it.
            let corrected = try await world.store.correctTime(
                taskID: task, personID: ann.id, kind: .work, start: entries[0].startedAt, end: entries[0].startedAt.addingTimeInterval(900))
            #expect(corrected.map { "\($0.minutes ?? -1) \($0.source)" } == ["15 manager"])
        }
    }

    @Test func theSameEntryAgainChangesNothingAndANewerOneFromTheSameWorkerIsTakenAfterAnAutomaticOne() async throws {
        try await Self.withWorld { world in
            let ann = world.fixtures.ann
            let day = "2026-10-29"
            let task = try await world.task("Pump", for: ann, day: day, from: "08:00", to: "09:00")
            _ = try await world.apply(
                ann, [("start", task, Self.at(day, "08:00"), nil, nil), ("complete", task, Self.at(day, "17:00"), nil, nil)])
            _ = try await world.sql(
                "INSERT INTO webhook_subscriptions (url, events, secret) VALUES ('https://billing.example/h', ARRAY['task.costed'], \("whsec_" + String(repeating: "A", count: 44)))"
            )
            // Her phone sends two corrections made at noon (after the completion was taken in at 17:00).
            let first = TimeOnJob.value(start: Self.at(day, "08:00"), end: Self.at(day, "11:00"))
            let second = TimeOnJob.value(start: Self.at(day, "08:00"), end: Self.at(day, "11:30"))
            #expect(try await world.apply(ann, [("time", task, Self.at(day, "12:00"), "work", first)]) == [nil])
            #expect(
                try await world.apply(ann, [("time", task, Self.at(day, "12:05"), "work", second)]) == [nil],
                "not superseded by the completion's time")
            #expect(try await world.entries(task) == ["ann work 08:00-11:30 worker"])
            // Fifty times the same entry: taken, and billing hears of it once: the second change above's costs, which
            // replaced the first's while it waited (task.costed merges).
            let costedBefore = try await world.sql("SELECT count(*)::int FROM outbox_events WHERE event = 'task.costed'").first!.decode(
                Int.self)
            let again = Array(repeating: ("time", task, Self.at(day, "12:10"), Optional("work"), Optional(second)), count: 50)
            #expect(try await world.apply(ann, again) == Array(repeating: nil, count: 50))
            let costedAfter = try await world.sql("SELECT count(*)::int FROM outbox_events WHERE event = 'task.costed'").first!.decode(
                Int.self)
            #expect(costedBefore == 1 && costedAfter == costedBefore, "\(costedBefore) then \(costedAfter)")
        }
    }

    @Test func theTimesheetCountsEachDayOnItsTasksClockAcrossTheChangeOfClocksAndEqualsTheSumOfEntries() async throws {
        try await Self.withWorld { world in
            let (ann, bo) = (world.fixtures.ann, world.fixtures.bo)
            let sunday = "2026-10-25"
            let task = try await world.task("Night repair", for: ann, day: sunday, from: "00:00", to: "06:00")
            let friday = try await world.task("Late call", for: ann, day: "2026-10-23", from: "21:00", to: "23:00")
            // 00:30 summer time to 04:30 winter time: five hours passed, though the clock moved four.
            let night = TimeOnJob.value(start: Self.at(sunday, "00:30"), end: Self.at(sunday, "04:30"))
            #expect(night == "2026-10-24T22:30:00Z/2026-10-25T03:30:00Z")
            // Friday 22:00 to Saturday 02:00: two hours on each day.
            let late = TimeOnJob.value(start: Self.at("2026-10-23", "22:00"), end: Self.at("2026-10-24", "02:00"))
            #expect(
                try await world.apply(
                    ann,
                    [
                        ("time", task, Self.at(sunday, "05:00"), "work", night),
                        ("time", friday, Self.at("2026-10-24", "02:05"), "work", late),
                    ]) == [nil, nil])
            // Bo has a week of his own (Monday to Thursday, 06:00-14:00) and Friday off by exception.
            try await world.store.setWorkingWeek(personID: bo.id, try WorkingWeek(parsing: ["mon-thu 06:00-14:00"]))
            _ = try await world.sql(
                "INSERT INTO working_day_exceptions (person_id, day, starts, ends) VALUES (\(bo.id), '2026-10-22', NULL, NULL)")
            let boTask = try await world.task("Thursday job", for: bo, day: "2026-10-22", from: "08:00", to: "10:00")
            let thursday = TimeOnJob.value(start: Self.at("2026-10-22", "08:00"), end: Self.at("2026-10-22", "09:15"))
            #expect(try await world.apply(bo, [("time", boTask, Self.at("2026-10-22", "09:20"), "travel", thursday)]) == [nil])

            let sheet = try await world.store.timesheet(week: "2026-W43")
            #expect(sheet.days.first?.description == "2026-10-19" && sheet.days.last?.description == sunday)
            let annSheet = try #require(sheet.people.first { $0.personID == ann.id })
            #expect(annSheet.days.map(\.work) == [0, 0, 0, 0, 120, 120, 300])
            #expect(annSheet.days.map(\.overtime) == [0, 0, 0, 0, 0, 120, 300], "no week set: 07:00-16:00 Monday to Friday")
            let entries = try await world.store.timeEntries(ofTask: task) + world.store.timeEntries(ofTask: friday)
            #expect(annSheet.total == entries.compactMap(\.minutes).reduce(0, +) && annSheet.total == 540)
            let boSheet = try #require(sheet.people.first { $0.personID == bo.id })
            #expect(boSheet.days.map(\.expected) == [480, 480, 480, 0, 0, 0, 0], "Thursday off by exception; no Friday in his week")
            #expect(boSheet.days[3].travel == 75 && boSheet.days[3].overtime == 75)
            // Everyone active in a team is on it, time or not; with --team, its members only.
            #expect(sheet.people.map(\.name).contains("cy Test"))
            let red = try await world.store.timesheet(week: "2026-W43", team: world.fixtures.red.id)
            #expect(Set(red.people.map(\.personID)) == [ann.id, bo.id])
            #expect(red.csvRows.count == 1 + 2 * 7 && red.csvRows[0].first == "person_id")
            let annSunday = try #require(red.csvRows.first { $0[0] == String(ann.id) && $0[2] == sunday })
            #expect(annSunday[3...] == ["300", "0", "300", "0", "300"])
        }
    }

    @Test func aWeekIsAnISOWeekThatExists() throws {
        #expect(try Timesheet.monday(ofWeek: "2026-W01").description == "2025-12-29")
        #expect(try Timesheet.monday(ofWeek: "2026-W53").description == "2026-12-28")
        for bad in ["2027-W53", "2026-W00", "2026-44", "2026-W4", "W44", "1999-W01", "2026-W44x"] {
            #expect(throws: TeamworkError.self, "\(bad)") { try Timesheet.monday(ofWeek: bad) }
        }
    }
}
