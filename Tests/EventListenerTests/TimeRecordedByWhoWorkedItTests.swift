import Foundation
import PostgresNIO
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// Issue 64's first hole: time on the job is recorded by who worked it, once. Seen failing on
/// a28f529: a worker's 12 h on a teammate's task was taken, overlapping entries were all taken,
/// and a worker's later entry replaced a manager's correction. Every time here is set.
@Suite("Time on the job: recorded by who worked it")
struct TimeRecordedByWhoWorkedItTests {
    typealias World = TimeOnJobTests.World
    static func at(_ day: String, _ time: String) -> Date { TimeOnJobTests.at(day, time) }
    static let day = "2026-10-27"

    @Test func aWorkerWhoNeverHeldATaskCannotPadItsTimeAndWhoHeldItStillCan() async throws {
        try await TimeOnJobTests.withWorld { world in
            let (ann, bo) = (world.fixtures.ann, world.fixtures.bo)
            let mine = try await world.task("Meter", for: ann, day: Self.day, from: "08:00", to: "10:00")
            _ = try await world.sql(
                "INSERT INTO webhook_subscriptions (url, events, secret) VALUES ('https://billing.example/h', ARRAY['task.costed'], \("whsec_" + String(repeating: "A", count: 44)))"
            )
            _ = try await world.apply(
                ann, [("start", mine, Self.at(Self.day, "08:00"), nil, nil), ("complete", mine, Self.at(Self.day, "09:30"), nil, nil)])
            // Bo, her teammate, records 12 h of work and 12 h of travel on it: neither is his to record.
            let padded = try await world.apply(
                bo,
                [
                    (
                        "time", mine, Self.at(Self.day, "21:00"), "work",
                        TimeOnJob.value(start: Self.at(Self.day, "08:00"), end: Self.at(Self.day, "20:00"))
                    ),
                    (
                        "time", mine, Self.at(Self.day, "21:00"), "travel",
                        TimeOnJob.value(start: Self.at("2026-10-26", "20:00"), end: Self.at(Self.day, "08:00"))
                    ),
                ])
            #expect(padded == ["not_held", "not_held"])
            #expect(try await world.entries(mine) == ["ann work 08:00-09:30 auto"])
            // Payroll and billing see only what was taken.
            let sheet = try await world.store.timesheet(week: "2026-W44")
            #expect(sheet.people.first { $0.personID == bo.id }?.total == 0)
            let labour = try await world.store.labour(from: try LocalDate(parsing: Self.day), to: try LocalDate(parsing: Self.day))
            #expect(labour.map(\.entry.personID) == [ann.id])
            let billed = try await world.sql(
                "SELECT payload::text FROM outbox_events WHERE event = 'task.costed' AND task_id = \(mine)"
            ).map { try $0.decode(String.self) }
            #expect(billed.count == 1 && billed[0].contains("ann Test") && !billed[0].contains("bo Test"), "\(billed)")

            // Given to Bo since, the task is still one Ann held: she records her travel to it.
            _ = try await world.sql("UPDATE tasks SET assignee_id = \(bo.id) WHERE id = \(mine)")
            let travel = TimeOnJob.value(start: Self.at(Self.day, "07:40"), end: Self.at(Self.day, "08:00"))
            #expect(try await world.apply(ann, [("time", mine, Self.at(Self.day, "22:00"), "travel", travel)]) == [nil])
        }
    }

    @Test func aPersonsEntriesNeverOverlapAcrossTasksAndKindsForWorkersAndManagersAlike() async throws {
        try await TimeOnJobTests.withWorld { world in
            let ann = world.fixtures.ann
            let first = try await world.task("Pump", for: ann, day: Self.day, from: "08:00", to: "12:00")
            let second = try await world.task("Boiler", for: ann, day: Self.day, from: "13:00", to: "14:00")
            let morning = TimeOnJob.value(start: Self.at(Self.day, "08:00"), end: Self.at(Self.day, "12:00"))
            #expect(try await world.apply(ann, [("time", first, Self.at(Self.day, "12:05"), "work", morning)]) == [nil])
            // The same hours again on another task, as work or as travel: refused, naming the clash.
            let again = TimeOnJob.value(start: Self.at(Self.day, "10:00"), end: Self.at(Self.day, "12:30"))
            #expect(
                try await world.apply(
                    ann,
                    [
                        ("time", second, Self.at(Self.day, "12:40"), "work", again),
                        ("time", second, Self.at(Self.day, "12:40"), "travel", again),
                    ]
                ) == ["time_overlap", "time_overlap"])
            let detail = try #require(
                try await world.sql(
                    "SELECT detail FROM field_changes WHERE task_id = \(second) AND conflict = 'time_overlap' ORDER BY id LIMIT 1"
                ).first
            ).decode(String.self)
            #expect(
                detail
                    == "it overlaps work on task \(first) from \(TimeOnJob.instant(Self.at(Self.day, "08:00"))) to \(TimeOnJob.instant(Self.at(Self.day, "12:00")))"
            )
            // Travel on the same task over its work: refused too. Ending as the work begins: taken.
            #expect(try await world.apply(ann, [("time", first, Self.at(Self.day, "12:45"), "travel", again)]) == ["time_overlap"])
            let drive = TimeOnJob.value(start: Self.at(Self.day, "12:00"), end: Self.at(Self.day, "12:30"))
            #expect(try await world.apply(ann, [("time", second, Self.at(Self.day, "12:50"), "travel", drive)]) == [nil])
            // Her own entry moved within its hours is no clash with itself.
            let shorter = TimeOnJob.value(start: Self.at(Self.day, "08:30"), end: Self.at(Self.day, "11:55"))
            #expect(try await world.apply(ann, [("time", first, Self.at(Self.day, "13:00"), "work", shorter)]) == [nil])
            // A manager cannot make her entries overlap either.
            await #expect(throws: (any Error).self) {
                _ = try await world.store.correctTime(
                    taskID: second, personID: ann.id, kind: .work, start: Self.at(Self.day, "11:00"), end: Self.at(Self.day, "13:00"))
            }
            #expect(try await world.entries(second) == ["ann travel 12:00-12:30 worker"])
        }
    }

    @Test func aManagersCorrectionStandsAndTheWorkersLaterEntryWaitsForTheDispatcher() async throws {
        try await TimeOnJobTests.withWorld { world in
            let ann = world.fixtures.ann
            world.store.actorID = world.fixtures.manager.id
            let task = try await world.task("Leak", for: ann, day: Self.day, from: "08:00", to: "09:00")
            let claimed = TimeOnJob.value(start: Self.at(Self.day, "08:00"), end: Self.at(Self.day, "11:00"))
            #expect(try await world.apply(ann, [("time", task, Self.at(Self.day, "11:00"), "work", claimed)]) == [nil])
            // The dispatcher corrects it to the two hours the customer signed for.
            _ = try await world.store.correctTime(
                taskID: task, personID: ann.id, kind: .work, start: Self.at(Self.day, "08:00"), end: Self.at(Self.day, "10:00"))
            // Her phone sends its entry again later: it does not overwrite the correction.
            let later = TimeOnJob.value(start: Self.at(Self.day, "08:00"), end: Self.at(Self.day, "11:30"))
            #expect(try await world.apply(ann, [("time", task, Self.at(Self.day, "12:00"), "work", later)]) == ["corrected_by_manager"])
            #expect(try await world.entries(task) == ["ann work 08:00-10:00 manager"])
            let waiting = try await world.store.conflicts(taskID: task)
            #expect(waiting.map(\.rule) == ["corrected_by_manager"])
            // The dispatcher may take hers after all: the decision is a correction of its own.
            _ = try await world.store.acceptConflict(id: try #require(waiting.first).id)
            #expect(try await world.entries(task) == ["ann work 08:00-11:30 manager"])
        }
    }

    @Test func nothingIsRecordedChangedOrRemovedOnDaysPayrollClosedByAWorkerOrAManager() async throws {
        try await TimeOnJobTests.withWorld { world in
            let ann = world.fixtures.ann
            world.store.actorID = world.fixtures.manager.id
            let task = try await world.task("Pump", for: ann, day: Self.day, from: "08:00", to: "10:00")
            let morning = TimeOnJob.value(start: Self.at(Self.day, "08:00"), end: Self.at(Self.day, "10:00"))
            #expect(try await world.apply(ann, [("time", task, Self.at(Self.day, "10:05"), "work", morning)]) == [nil])
            // Payroll closes week 44 (Monday 26 October to Sunday 1 November, on the task's clock).
            let closed = try await world.store.closePayroll(week: "2026-W44")
            #expect(closed.through.description == "2026-11-01" && closed.closedBy == "max Test")
            #expect(try await world.store.timesheet(week: "2026-W44").closed == closed)
            // Her later change of that entry, or its removal, is refused; her Monday after is taken.
            let longer = TimeOnJob.value(start: Self.at(Self.day, "08:00"), end: Self.at(Self.day, "11:00"))
            let gone = TimeOnJob.value(start: Self.at("2026-11-02", "07:00"), end: Self.at("2026-11-02", "07:00"))
            let monday = TimeOnJob.value(start: Self.at("2026-11-02", "07:30"), end: Self.at("2026-11-02", "08:00"))
            let later = try await world.task("Boiler", for: ann, day: "2026-11-02", from: "08:00", to: "10:00")
            #expect(try await world.apply(ann, [("time", task, Self.at("2026-11-02", "09:00"), "work", longer)]) == ["period_closed"])
            #expect(try await world.apply(ann, [("time", task, Self.at("2026-11-02", "09:01"), "work", gone)]) == ["period_closed"])
            #expect(try await world.apply(ann, [("time", later, Self.at("2026-11-02", "09:02"), "travel", monday)]) == [nil])
            #expect(try await world.entries(task) == ["ann work 08:00-10:00 worker"])
            // The manager cannot change it either, and closing goes forward only.
            await #expect(throws: (any Error).self) {
                _ = try await world.store.correctTime(
                    taskID: task, personID: ann.id, kind: .work, start: Self.at(Self.day, "08:00"), end: Self.at(Self.day, "09:00"))
            }
            await #expect(throws: (any Error).self) { _ = try await world.store.closePayroll(week: "2026-W43") }
            await #expect(throws: (any Error).self) { _ = try await world.store.closePayroll(week: "2026-W54") }
            #expect(try await world.store.payrollClosed() == closed)
        }
    }

    /// Time kept by a worker's own start and completion is held to the rules a worker's own
    /// entry is (the review of issue 64: a phone's start and completion, dated back into a
    /// closed week, a month ago or across other work, counted there). Such an entry stays
    /// open, counted nowhere, until the worker or a manager enters the time; the job is done.
    @Test func aStartAndCompletionDatedOnClosedDaysLongAgoOrAcrossOtherWorkCountNothing() async throws {
        try await TimeOnJobTests.withWorld { world in
            let ann = world.fixtures.ann
            world.store.actorID = world.fixtures.manager.id
            _ = try await world.store.closePayroll(week: "2026-W44")
            // On days payroll closed.
            let closed = try await world.task("Pump", for: ann, day: Self.day, from: "08:00", to: "10:00")
            let onClosedDays = try await world.apply(
                ann, [("start", closed, Self.at(Self.day, "08:00"), nil, nil), ("complete", closed, Self.at(Self.day, "12:00"), nil, nil)])
            #expect(onClosedDays == [nil, nil])
            let closedStatus = try await world.store.task(id: closed).status
            #expect(closedStatus == .completed)
            #expect(try await world.entries(closed) == ["ann work 08:00-… auto"])
            let sheet = try await world.store.timesheet(week: "2026-W44")
            #expect(sheet.people.first { $0.personID == ann.id }?.total == 0)

            // More than 31 days before the service received them (week 45 is open).
            let old = try await world.task("Valve", for: ann, day: "2026-11-03", from: "08:00", to: "10:00")
            let longAgo = try await world.apply(
                ann,
                [("start", old, Self.at("2026-11-03", "08:00"), nil, nil), ("complete", old, Self.at("2026-11-03", "11:00"), nil, nil)],
                received: Self.at("2026-12-05", "12:00"))
            #expect(longAgo == [nil, nil])
            #expect(try await world.entries(old) == ["ann work 08:00-… auto"])

            // Across work she entered herself on another task: the later sitting is not counted twice.
            let first = try await world.task("Meter", for: ann, day: "2026-11-10", from: "08:00", to: "10:00")
            let second = try await world.task("Boiler", for: ann, day: "2026-11-10", from: "08:00", to: "10:00")
            let entered = TimeOnJob.value(start: Self.at("2026-11-10", "08:00"), end: Self.at("2026-11-10", "10:00"))
            #expect(try await world.apply(ann, [("time", first, Self.at("2026-11-10", "10:00"), "work", entered)]) == [nil])
            let across = try await world.apply(
                ann,
                [
                    ("start", second, Self.at("2026-11-10", "09:00"), nil, nil),
                    ("complete", second, Self.at("2026-11-10", "11:00"), nil, nil),
                ])
            #expect(across == [nil, nil])
            #expect(try await world.entries(second) == ["ann work 09:00-… auto"])

            // Her own work the next day, dated as it happened and sent at once, counts as always.
            let fine = try await world.task("Tap", for: ann, day: "2026-11-11", from: "08:00", to: "10:00")
            _ = try await world.apply(
                ann,
                [("start", fine, Self.at("2026-11-11", "08:00"), nil, nil), ("complete", fine, Self.at("2026-11-11", "09:30"), nil, nil)])
            #expect(try await world.entries(fine) == ["ann work 08:00-09:30 auto"])
        }
    }
}
