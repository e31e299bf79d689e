import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// Recurring work (`teamwork-manager plan …`): a year of maintenance set up
/// with one command, made on the crew's wall clock, never a task twice.
@Suite("teamwork-manager: recurring plans")
struct PlanTests {
    struct Made: Decodable {
        var planID: Int64
        var made: Int
        var error: String?
    }

    /// Occurrences of `plan`: (plan day, task) for the ones standing (not superseded).
    static func standing(_ store: CentralStore, _ plan: Int64) async throws -> [(day: LocalDate, task: FieldTask)] {
        try await store.occurrences(ofPlan: plan).filter { !$0.superseded }.map { ($0.day, $0.task) }
    }

    static func addWeekly(_ manager: ManagerTool, _ extra: String...) async throws -> Plan {
        let added = try await manager.run(
            [
                "plan", "add", "--title", "Meter round", "--team", "red", "--rrule", "FREQ=WEEKLY;BYDAY=MO",
                "--start", "2031-03-03", "--window-start", "08:00", "--duration", "PT2H", "--horizon", "30",
                "--json",
            ] + extra)
        #expect(added.status == 0, "\(added.stderr)")
        return try JSONOutput.decode(Plan.self, added.stdout)
    }

    @Test func aWeeklyPlanIsMadeAt0800OnTheCrewsClockAcrossTheClockChangeAndNeverTwice() async throws {
        try await TestWorld.with("plans") { world, store in
            let manager = ManagerTool(world.url)
            #expect(try await manager("team", "update", "red", "--time-zone", "Europe/Stockholm").status == 0)
            let plan = try await Self.addWeekly(manager)
            #expect(plan.timeZone == "Europe/Stockholm" && plan.rule == "FREQ=WEEKLY;BYDAY=MO")

            let first = try await manager("plan", "generate", "--until", "2031-04-14", "--json")
            #expect(first.status == 0, "\(first.stderr)")
            #expect(try JSONOutput.decode([Made].self, first.stdout).first?.made == 7, "seven Mondays, 3 March to 14 April")
            let again = try await manager("plan", "generate", "--until", "2031-04-14", "--json")
            #expect(try JSONOutput.decode([Made].self, again.stdout).first?.made == 0, "a second run makes nothing")

            let made = try await Self.standing(store, plan.id)
            #expect(
                made.map(\.day.description) == [
                    "2031-03-03", "2031-03-10", "2031-03-17", "2031-03-24", "2031-03-31",
                    "2031-04-07", "2031-04-14",
                ])
            let stockholm = try Zone("Europe/Stockholm")
            for (day, task) in made {
                #expect(stockholm.time(of: try #require(task.window).start) == LocalTime(hour: 8, minute: 0), "\(day): 08:00 there")
                #expect(task.planID == plan.id && task.planDate == day && task.teamID == world.fixtures.red.id)
                #expect(task.dueAt == stockholm.endOfDay(day))
            }
            // Clocks go forward on 30 March 2031: 07:00 UTC before, 06:00 after.
            #expect(made[3].task.window?.start == (try ISODate.parse("2031-03-24T07:00:00Z")))
            #expect(made[4].task.window?.start == (try ISODate.parse("2031-03-31T06:00:00Z")))
            let shown = try await manager("task", "show", String(made[0].task.id)).stdout
            #expect(shown.contains("plan \(plan.id), the occurrence of 2031-03-03"), "\(shown)")
        }
    }

    @Test func twoGeneratorsAtOnceMakeEachOccurrenceOnce() async throws {
        try await TestWorld.with("plans-race") { world, store in
            let manager = ManagerTool(world.url)
            let plan = try await Self.addWeekly(manager)
            let daily = try await manager(
                "plan", "add", "--title", "Daily check", "--team", "red", "--rrule", "FREQ=DAILY",
                "--start", "2031-01-01", "--window-start", "07:00", "--duration", "PT30M", "--json")
            let dailyPlan = try JSONOutput.decode(Plan.self, daily.stdout)
            // Four processes at once, each over the same year.
            let runs = try await withThrowingTaskGroup(of: Int32.self) { group in
                for _ in 0..<4 {
                    group.addTask { try await manager("plan", "generate", "--until", "2031-12-31").status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(runs.allSatisfy { $0 == 0 }, "\(runs)")
            #expect(try await Self.standing(store, plan.id).count == 44, "every Monday of 2031 from 3 March, once")
            #expect(try await Self.standing(store, dailyPlan.id).count == 365, "every day of 2031, once")
            let duplicates = try await store.rows(
                "SELECT count(*) - count(DISTINCT (plan_id, plan_date)) FROM tasks WHERE plan_id IS NOT NULL")
            #expect(try duplicates[0].decode(Int.self) == 0)
        }
    }

    @Test func editingAPlanRemakesTheUntouchedOccurrencesAndKeepsTheTouchedOnes() async throws {
        try await TestWorld.with("plans-edit") { world, store in
            let manager = ManagerTool(world.url)
            let plan = try await Self.addWeekly(manager)
            #expect(try await manager("plan", "generate", "--until", "2031-03-31").status == 0)
            let before = try await Self.standing(store, plan.id)
            #expect(before.count == 5)
            // A dispatcher gives the second one to Ann: touched, it stands.
            let touched = before[1].task
            #expect(try await manager("task", "assign", String(touched.id), "--team", "red", "--assignee", "ann@example.org").status == 0)

            let updated = try await manager("plan", "update", String(plan.id), "--window-start", "09:00", "--from", "2031-03-01")
            #expect(
                updated.status == 0 && updated.stdout.contains("4 untouched occurrences cancelled"), "\(updated.stdout) \(updated.stderr)"
            )
            #expect(try await manager("plan", "generate", "--until", "2031-03-31").status == 0)
            let after = try await Self.standing(store, plan.id)
            #expect(after.count == 5, "one task per day still")
            for (day, task) in after {
                let hour = Zone.utc.time(of: try #require(task.window).start).hour
                if task.id == touched.id {
                    #expect(hour == 8, "the touched one keeps its time")
                } else {
                    #expect(hour == 9 && task.id != before.first { $0.day == day }?.task.id, "\(day) made anew at 09:00")
                }
            }
            let cancelled = try await store.occurrences(ofPlan: plan.id).filter(\.superseded)
            #expect(cancelled.count == 4 && cancelled.allSatisfy { $0.task.status == .cancelled && $0.reason == "plan changed" })
            let shown = try await manager("plan", "show", String(plan.id)).stdout
            #expect(shown.contains("kept (touched before the plan changed)") && shown.contains("plan changed"), "\(shown)")
            // Whose work it is and where (seen before: plan show omitted team, assignee and site).
            #expect(shown.contains("team") && shown.contains("red") && shown.contains("nobody (free for the team)"), "\(shown)")
        }
    }

    @Test func pauseSkipAndMoveDoWhatTheySay() async throws {
        try await TestWorld.with("plans-pause") { world, store in
            let manager = ManagerTool(world.url)
            let plan = try await Self.addWeekly(manager)
            #expect(try await manager("plan", "generate", "--until", "2031-03-31").status == 0)
            #expect(try await manager("plan", "skip", String(plan.id), "2031-03-10").status == 0)
            #expect(try await manager("plan", "move", String(plan.id), "2031-03-17", "2031-03-19").status == 0)
            let wrongDay = try await manager("plan", "skip", String(plan.id), "2031-03-11")
            #expect(
                wrongDay.status == TeamworkError.Code.invalidInput.exitStatus && wrongDay.stderr.contains("no occurrence on 2031-03-11"))
            #expect(try await manager("plan", "generate", "--until", "2031-03-31").status == 0)
            let standing = try await Self.standing(store, plan.id)
            #expect(standing.map(\.day.description) == ["2031-03-03", "2031-03-17", "2031-03-24", "2031-03-31"], "the 10th skipped")
            let moved = try #require(standing.first { $0.day.description == "2031-03-17" }).task
            #expect(moved.window?.start == (try ISODate.parse("2031-03-19T08:00:00Z")), "moved to the 19th, same time")

            #expect(try await manager("plan", "pause", String(plan.id)).status == 0)
            #expect(try await Self.standing(store, plan.id).isEmpty, "pause cancels the untouched future")
            #expect(try await manager("plan", "generate", "--until", "2031-03-31").stdout.contains("No active plans."))
            #expect(try await manager("plan", "resume", String(plan.id)).status == 0)
            #expect(try await manager("plan", "generate", "--until", "2031-03-31").status == 0)
            #expect(try await Self.standing(store, plan.id).count == 4, "made again, skips and moves kept")
            #expect(try await manager("plan", "list").stdout.contains("FREQ=WEEKLY;BYDAY=MO"))
        }
    }

    @Test func aBadRuleIsOneLineAndOnePlanThatCannotBeMadeHoldsBackNoOther() async throws {
        try await TestWorld.with("plans-bad") { world, store in
            let manager = ManagerTool(world.url)
            let bad = try await manager(
                "plan", "add", "--title", "x", "--team", "red", "--rrule", "FREQ=MONTHLY;BYSETPOS=-1",
                "--start", "2031-01-01", "--window-start", "08:00", "--duration", "PT1H")
            #expect(
                bad.status == TeamworkError.Code.invalidInput.exitStatus && bad.errorLines.count == 1 && bad.stderr.contains("BYSETPOS"),
                "\(bad.stderr)")
            #expect(try await store.listPlans().isEmpty, "nothing written")
            // Bo lacks climbing: his plan cannot be made; the team's can.
            let climbing = try await manager(
                "plan", "add", "--title", "Pole check", "--team", "red", "--assignee", "bo@example.org",
                "--requires", "climbing", "--rrule", "FREQ=WEEKLY", "--start", "2031-03-03",
                "--window-start", "08:00", "--duration", "PT1H")
            #expect(climbing.status == 0, "\(climbing.stderr)")
            let plan = try await Self.addWeekly(manager)
            let generated = try await manager("plan", "generate", "--until", "2031-03-31")
            #expect(
                generated.status == TeamworkError.Code.conflict.exitStatus && generated.stdout.contains("Pole check): nothing made")
                    && generated.stdout.contains("climbing"), "\(generated.stdout)")
            #expect(try await Self.standing(store, plan.id).count == 5)
        }
    }

    /// `teamwork-service run` makes plans' occurrences by itself, at once when a plan changes (a plan
    /// written straight to the database, as no manager tool made them; its hourly pass long away),
    /// and they replicate like any other task.
    @Test func theServiceMakesOccurrencesAsSoonAsAPlanChangesAndTheyReachTheReplicas() async throws {
        try await TestWorld.with("plans-service") { world, store in
            let port = ServiceProcess.freePort()
            let service = ServiceProcess(
                [
                    "run", "--database-url", world.url.connectionString, "--replicas", world.replicas.path,
                    "--port", String(port), "--sweep", "0.5", "--plan-interval", "3600",
                ],
                port: port, log: world.folder.appending(path: "service.log").path)
            try await service.start()
            defer { service.stopInBackground() }
            // Listening for plan changes: from then on a change wakes it (a change before would be in its first pass).
            try await expectEventually("the service listens for plan changes", within: .seconds(30)) {
                service.logText.contains("listening for plan changes")
            }
            // From tomorrow: every occurrence is ahead whatever the hour now (today's 23:00 is past after 23:00).
            let tomorrow = Zone.utc.date(of: Date()).adding(days: 1)
            let plan = try await store.addPlan(
                try NewPlan(
                    title: "Daily check", assignment: try Assignment(teamID: world.fixtures.red.id, assigneeID: nil),
                    rule: "FREQ=DAILY", startsOn: tomorrow, windowStart: LocalTime(hour: 23, minute: 0)!, durationMinutes: 30,
                    horizonDays: 4))
            try await expectEventually("four days made by the service within seconds, not at its next hourly pass", within: .seconds(20)) {
                try await Self.standing(store, plan.id).count == 4
            }
            try await expectEventually("replicas agree with the master", within: .seconds(30)) {
                try await Tool.service.run(["verify", "--database-url", world.url.connectionString, "--replicas", world.replicas.path])
                    .status == 0
            }
            #expect(service.logText.contains("plan occurrences made"), "\(service.logTail(2000))")
            #expect(try await service.stop() == 0)
        }
    }

    @Test func theReportCountsEachPlansWeekAndFlagsAMissedLastOccurrence() async throws {
        try await TestWorld.with("plans-report") { world, store in
            let today = Zone.utc.date(of: Date())
            let plan = try await store.addPlan(
                try NewPlan(
                    title: "Daily check", assignment: try Assignment(teamID: world.fixtures.red.id, assigneeID: nil),
                    rule: "FREQ=DAILY", startsOn: today, windowStart: LocalTime(hour: 0, minute: 0)!, durationMinutes: 30, horizonDays: 3))
            #expect(try await store.generatePlans().first?.made == 4)
            let now = try #require(try await store.report().plans.first { $0.planID == plan.id })
            #expect(now.dueThisWeek == 4 && !now.lastMissed, "\(now)")
            // Ten days on, nobody did the last one.
            let later = try #require(try await store.report(now: Date().addingTimeInterval(10 * 86_400)).plans.first)
            #expect(later.dueThisWeek == 0 && later.lastMissed && later.lastDue == Zone.utc.endOfDay(today.adding(days: 3)), "\(later)")
            let printed = try await ManagerTool(world.url)("report").stdout
            #expect(printed.contains("Recurring plans:") && printed.contains("Daily check"), "\(printed)")
        }
    }

    /// A team that moves its clock (set up in UTC, then given its real zone) keeps its plans at 08:00
    /// on the new clock: the untouched occurrences are made anew, the touched ones stand.
    @Test func aTeamsNewTimeZoneMovesItsPlansUntouchedOccurrencesToTheNewClock() async throws {
        try await TestWorld.with("plans-zone") { world, store in
            let manager = ManagerTool(world.url)
            let plan = try await Self.addWeekly(manager)
            #expect(try await manager("plan", "generate", "--until", "2031-03-31").status == 0)
            let touched = try await Self.standing(store, plan.id)[0].task
            #expect(try await manager("task", "update", String(touched.id), "--priority", "high").status == 0)
            #expect(try await manager("team", "update", "red", "--time-zone", "Europe/Stockholm").status == 0)
            #expect(try await manager("plan", "generate", "--until", "2031-03-31").status == 0)
            let stockholm = try Zone("Europe/Stockholm")
            let after = try await Self.standing(store, plan.id)
            #expect(after.count == 5)
            for (day, task) in after {
                let start = try #require(task.window).start
                if task.id == touched.id {
                    #expect(start == (try ISODate.parse("2031-03-03T08:00:00Z")), "the touched one keeps its instant")
                } else {
                    #expect(stockholm.time(of: start) == LocalTime(hour: 8, minute: 0), "\(day): 08:00 on the new clock")
                }
            }
            let reasons = try await store.occurrences(ofPlan: plan.id).filter(\.superseded).map(\.reason)
            #expect(reasons.count == 4 && reasons.allSatisfy { $0 == "time zone changed" }, "\(reasons)")
        }
    }

    /// What a plan row and a zone may hold is checked where they are written, whoever writes them.
    @Test func aBadPlanRowOrUnknownZoneIsRefusedWhereItIsWrittenAndPastChangesAreRefused() async throws {
        try await TestWorld.with("plans-checks") { world, store in
            let manager = ManagerTool(world.url)
            let plan = try await Self.addWeekly(manager)
            let past = try await manager("plan", "update", String(plan.id), "--window-start", "09:00", "--from", "2020-01-01")
            #expect(
                past.status == TeamworkError.Code.invalidInput.exitStatus && past.stderr.contains("--from must be today"), "\(past.stderr)")
            await #expect(throws: (any Error).self, "no 24:00 window") {
                _ = try await store.rows("UPDATE plans SET window_start = '24:00' WHERE id = \(plan.id) RETURNING id")
            }
            await #expect(throws: (any Error).self, "no zone the database does not know") {
                _ = try await store.rows("UPDATE teams SET time_zone = 'Mars/Olympus' WHERE id = \(world.fixtures.red.id) RETURNING id")
            }
            await #expect(throws: (any Error).self, "occurrences the plan does not give are refused") {
                _ = try await store.rows(
                    """
                    SELECT teamwork_generate_occurrences(\(plan.id), 1, ARRAY['2031-03-03']::date[], ARRAY[now()]::timestamptz[],
                                                         ARRAY[now() - interval '1 hour']::timestamptz[], ARRAY[now()]::timestamptz[])
                    """)
            }
            #expect(try await manager("plan", "remove", String(plan.id)).status == 0)
        }
    }
}
