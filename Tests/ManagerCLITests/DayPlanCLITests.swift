import DayPlanner
import Foundation
import PostgresNIO
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// Planning a day with the built `teamwork-manager`: who works when (weeks, days off, absences),
/// how long each job takes, applying a plan in one audited transaction, and re-planning the rest
/// of the day after a sick call.
@Suite("teamwork-manager day plan")
struct DayPlanCLITests {
    typealias World = DispatchCLITests.World

    static func create(_ w: World, _ title: String, _ extra: [String]) async throws -> FieldTask {
        let run = try await w.tool.run(
            ["task", "create", "--title", title, "--team", "red", "--location", String(w.ids["site"]!), "--json"] + extra)
        #expect(run.status == 0, "\(run.stderr)")
        return try JSONOutput.decode(FieldTask.self, run.stdout)
    }

    /// Seen on main: `person absence list` printed UTC instants for an absence entered on the team's
    /// clock. Both the answer to `add` and the list read on the person's team's clock.
    @Test func anAbsenceIsSaidAndListedOnThePersonsTeamClock() async throws {
        try await TestDatabase.withFresh { url in
            let w = try await DispatchCLITests.world(url)
            #expect(try await w.tool("team", "update", "red", "--time-zone", "Europe/Stockholm").status == 0)
            // Ten days from now (an absence over is not listed), on Stockholm's clock.
            let zone = try Zone("Europe/Stockholm")
            let first = zone.date(of: Date()).adding(days: 10)
            let added = try await w.tool(
                "person", "absence", "add", "ann@example.org", "--from", first.description, "--to", first.adding(days: 1).description,
                "--reason", "vacation")
            let (from, to) = (zone.format(zone.day(first).start), zone.format(zone.day(first.adding(days: 1)).end))
            #expect(from.hasSuffix(":00 CET") || from.hasSuffix(":00 CEST"))
            #expect(
                added.stdout == "Recorded absence 1: Ann Field away (vacation) from \(from) to \(to)\n", "\(added.stdout)\(added.stderr)")
            let listed = try await w.tool("person", "absence", "list").stdout
            #expect(listed.contains(from) && listed.contains(to), "\(listed)")
            #expect(from.hasPrefix("\(first) 00:00"), "midnight on the team's clock, not UTC: \(from)")
        }
    }

    /// Ann works afternoons only, Bo is off sick, Dan works the default hours: the plan keeps each
    /// one's hours, leaves Bo's pinned work with him (saying why), moves his other work, uses each
    /// task's own minutes on site (else the team's), and every plan passes the routing check.
    @Test func thePlanKeepsEachWorkersHoursAndAbsencesAndEachTasksMinutesOnSite() async throws {
        try await TestDatabase.withFresh { url in
            let w = try await DispatchCLITests.world(url)
            let day = "2026-12-01"  // a Tuesday
            #expect(try await w.tool("person", "hours", "ann@example.org", "--week", "mon-fri 12:00-16:00").status == 0)
            let shown = try await w.tool("person", "hours", "ann@example.org")
            #expect(shown.stdout.contains("mon-fri 12:00-16:00"), "\(shown.stdout)")
            let sick = try await w.tool("person", "absence", "add", "bo@example.org", "--from", day, "--to", day, "--reason", "sick")
            #expect(sick.status == 0, "\(sick.stderr)")
            // The same absence again says so and adds nothing (issue 50: it was taken silently).
            let again = try await w.tool("person", "absence", "add", "bo@example.org", "--from", day, "--to", day, "--reason", "sick")
            #expect(again.status == TeamworkError.Code.conflict.exitStatus && again.errorLines.count == 1, "\(again.stderr)")
            #expect(again.stderr.contains("away then already"), "\(again.stderr)")
            #expect(try await w.tool("team", "update", "red", "--task-minutes", "30").status == 0)
            let morning = try await Self.create(w, "Morning meter", ["--window", "\(day)T08:00/PT1H", "--duration", "90"])
            let afternoon = try await Self.create(w, "Afternoon meter", ["--window", "\(day)T13:00/PT2H"])
            let climb = try await Self.create(w, "Climb pole 3", ["--requires", "climbing", "--window", "\(day)T09:00/PT6H"])
            let pinned = try await Self.create(w, "Bo's own job", ["--assignee", "bo@example.org", "--window", "\(day)T10:00/PT1H"])
            #expect(try await w.tool("task", "update", String(pinned.id), "--pin").status == 0)
            let bos = try await Self.create(w, "Bo's other job", ["--assignee", "bo@example.org", "--window", "\(day)T10:00/PT1H"])

            let run = try await w.tool("day", "plan", "--team", "red", "--on", day, "--json", "--seconds", "0.3")
            #expect(run.status == 0, "\(run.stderr)")
            let plan = try JSONOutput.decode(DayPlan.self, run.stdout)
            let facts = try await CentralStore.withStore(url) { try await $0.dayFacts(teamID: plan.teamID, day: plan.day) }
            #expect(plan.problems(for: DayRequest(facts: facts, hours: try DayHours(parsing: "07:00-16:00"))) == [])
            let owner = Dictionary(uniqueKeysWithValues: plan.routes.flatMap { r in r.visits.map { ($0.taskID, r.personID) } })
            #expect(owner[morning.id] == w.ids["Dan"], "only Dan works at 08:00")
            #expect(owner[bos.id] == w.ids["Dan"], "Bo's unpinned work moves to who works at 10:00")
            #expect(plan.routes.map(\.personID).sorted() == [w.ids["Ann"]!, w.ids["Dan"]!], "Bo is not working")
            #expect(plan.away.map(\.why) == ["away (sick)"])
            let visits = plan.routes.flatMap(\.visits)
            let minutes = Dictionary(uniqueKeysWithValues: visits.map { ($0.taskID, $0.ends.timeIntervalSince($0.starts) / 60) })
            #expect(minutes[morning.id] == 90 && minutes[afternoon.id] == 30, "\(minutes)")
            let ann = try #require(plan.routes.first { $0.personID == w.ids["Ann"] })
            for visit in ann.visits { #expect(Zone.utc.time(of: visit.starts) >= LocalTime(hour: 12, minute: 0)!, "Ann works afternoons") }
            let reasons = Dictionary(uniqueKeysWithValues: plan.leftOut.map { ($0.taskID, $0.reason) })
            #expect(reasons[climb.id] == "everyone with climbing is away or off that day (Bo Field)")
            #expect(reasons[pinned.id] == "pinned to Bo Field, who is away (sick)")
            #expect(plan.leftOut.first { $0.taskID == pinned.id }?.keeps == true, "pinned work stays with Bo")

            // A day off by exception: Dan has none that day, so the morning cannot be done.
            #expect(try await w.tool("person", "hours", "dan@example.org", "--day", day, "--day-hours", "off").status == 0)
            let off = try JSONOutput.decode(
                DayPlan.self, try await w.tool("day", "plan", "--team", "red", "--on", day, "--json", "--seconds", "0.2").stdout)
            #expect(off.away.contains { $0.personID == w.ids["Dan"] && $0.why == "not working that day" })
            #expect(off.leftOut.contains { $0.taskID == morning.id })

            let badWeek = try await w.tool("person", "hours", "ann@example.org", "--week", "mon-fri 16:00-07:00")
            #expect(badWeek.status != 0 && badWeek.errorLines.count == 1, "\(badWeek.stderr)")
            let badAbsence = try await w.tool(
                "person", "absence", "add", "ann@example.org", "--from", day, "--to", "2026-11-30", "--reason", "sick")
            #expect(badAbsence.status != 0 && badAbsence.errorLines.count == 1, "\(badAbsence.stderr)")
            let badReason = try await w.tool("person", "absence", "add", "ann@example.org", "--from", day, "--to", day, "--reason", "bored")
            #expect(badReason.status == 64 && badReason.errorLines.count == 1, "\(badReason.stderr)")

            // Minutes on site from a CSV file; a row with none it could take stops the import.
            let file = FileManager.default.temporaryDirectory.appending(path: "durations-\(UUID().uuidString).csv")
            defer { try? FileManager.default.removeItem(at: file) }
            try "title,team,duration\nImported,red,25\n".write(to: file, atomically: true, encoding: .utf8)
            #expect(try await w.tool("task", "import", file.path).status == 0)
            let imported = try JSONOutput.decode(
                [FieldTask].self, try await w.tool("task", "list", "--search", "Imported", "--json").stdout)
            #expect(imported.map(\.durationMinutes) == [25])
            try "title,team,duration\nToo long,red,721\n".write(to: file, atomically: true, encoding: .utf8)
            let refused = try await w.tool("task", "import", file.path)
            #expect(refused.status != 0 && refused.stderr.contains("line 2, column 'duration'"), "\(refused.stderr)")

            // A recurring plan's occurrences take its minutes on site.
            let recurring = try await w.tool(
                "plan", "add", "--title", "Daily round", "--team", "red", "--rrule", "FREQ=DAILY", "--start",
                Zone.utc.date(of: Date()).description,
                "--window-start", "09:00", "--duration", "PT2H", "--minutes-on-site", "25", "--horizon", "3")
            #expect(recurring.status == 0, "\(recurring.stderr)")
            let rounds = try JSONOutput.decode(
                [FieldTask].self, try await w.tool("task", "list", "--search", "Daily round", "--json").stdout)
            #expect(!rounds.isEmpty && rounds.allSatisfy { $0.durationMinutes == 25 }, "\(rounds.map(\.durationMinutes))")
        }
    }

    /// `--apply` assigns every task as planned with its expected start in one transaction as the
    /// acting manager (the history says "planned"); a plan made before a task changed applies
    /// nothing. After a sick call, `--from` re-plans only what is left and shows the moves.
    @Test func applyingIsAtomicAndAuditedAndASickCallIsReplannedFromThen() async throws {
        try await TestDatabase.withFresh { url in
            let w = try await DispatchCLITests.world(url)
            let day = "2026-12-01"
            var tasks: [FieldTask] = []
            for hour in ["08", "10", "13", "14"] {
                tasks.append(try await Self.create(w, "Meter \(hour)", ["--window", "\(day)T\(hour):00/PT1H"]))
            }
            // A plan made, then one of its tasks changes: applying it changes nothing.
            let preview = try JSONOutput.decode(
                DayPlan.self, try await w.tool("day", "plan", "--team", "red", "--on", day, "--json", "--seconds", "0.2").stdout)
            #expect(try await w.tool("task", "update", String(tasks[3].id), "--priority", "high").status == 0)
            await #expect(throws: TeamworkError.self) {
                try await CentralStore.withStore(url) { store in
                    try await store.applyDayPlan(teamID: preview.teamID, day: preview.day, preview.assignments)
                }
            }
            let untouched = try JSONOutput.decode([FieldTask].self, try await w.tool("task", "list", "--json").stdout)
            #expect(untouched.allSatisfy { $0.assigneeID == nil && $0.plannedStart == nil }, "a stale plan applies nothing")

            let applied = try await w.tool(
                "day", "plan", "--team", "red", "--on", day, "--apply", "--actor", "max@example.org", "--seconds", "0.2")
            #expect(applied.status == 0 && applied.stdout.contains("applied"), "\(applied.stderr)\(applied.stdout)")
            let after = try JSONOutput.decode([FieldTask].self, try await w.tool("task", "list", "--json").stdout)
            #expect(after.allSatisfy { $0.assigneeID != nil && $0.plannedStart != nil && $0.status == .assigned }, "every task planned")
            for task in after {
                let window = try #require(task.window)
                #expect(task.plannedStart! >= window.start && task.plannedStart! <= window.end)
            }
            let history = try await w.tool("task", "history", String(tasks[0].id))
            #expect(history.stdout.contains("planned: day plan \(day)") && history.stdout.contains("Max Boss"), "\(history.stdout)")

            // Dan's 08:00 is done; he calls in sick at 12:30: the rest of his day goes to the others.
            let dan = w.ids["Dan"]!
            try await CentralStore.withStore(url) { store in
                try await store.connection.query(
                    "UPDATE tasks SET status = 'completed', completed_at = now(), completed_by = assignee_id WHERE id = \(tasks[0].id)",
                    logger: store.logger)
            }
            let absence = try await w.tool(
                "person", "absence", "add", "dan@example.org", "--from", "\(day)T12:30", "--to", day, "--reason", "sick")
            #expect(absence.status == 0, "\(absence.stderr)")
            let replan = try await w.tool(
                "day", "plan", "--team", "red", "--on", day, "--from", "12:30", "--apply", "--actor", "max@example.org", "--seconds", "0.2")
            #expect(replan.status == 0, "\(replan.stderr)")
            #expect(replan.stdout.contains("Not working: Dan Field (away (sick))"), "\(replan.stdout)")
            let final = try JSONOutput.decode([FieldTask].self, try await w.tool("task", "list", "--json").stdout)
            let byID = Dictionary(uniqueKeysWithValues: final.map { ($0.id, $0) })
            #expect(byID[tasks[0].id]?.status == .completed && byID[tasks[0].id]?.assigneeID == dan, "done work stays")
            for task in tasks[2...] {
                #expect(byID[task.id]?.assigneeID != dan, "\(task.title) left Dan")
                #expect((byID[task.id]?.plannedStart).map { Zone.utc.time(of: $0) >= LocalTime(hour: 12, minute: 30)! } == true)
            }
            if byID[tasks[2].id]?.assigneeID != nil, byID[tasks[2].id]?.assigneeID != dan {
                #expect(replan.stdout.contains("[moves here from"), "\(replan.stdout)")
            }
        }
    }

    /// An applied plan reaches the worker's phone: their tasks of the day come in the planned
    /// order, each with its ETA, in `tasks` and in `--json`.
    @Test func anAppliedPlansOrderAndETAsReachTheWorkersDevice() async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "dayplan-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let w = try await DispatchCLITests.world(url)
            let day = "2031-12-02"
            // Ann alone works that day; three jobs with wide windows: the plan chooses their order.
            for name in ["bo", "dan"] {
                #expect(try await w.tool("person", "hours", "\(name)@example.org", "--day", day, "--day-hours", "off").status == 0)
            }
            for (title, lat) in [("North job", "59.36"), ("South job", "59.30"), ("Middle job", "59.33")] {
                let site = try JSONOutput.decode(
                    Location.self,
                    try await w.tool("location", "add", "--name", title, "--lat", lat, "--lon", "18.06", "--json").stdout)
                let made = try await w.tool.run(
                    ["task", "create", "--title", title, "--team", "red", "--location", String(site.id), "--window", "\(day)T08:00/PT8H"])
                #expect(made.status == 0, "\(made.stderr)")
            }
            let applied = try await w.tool("day", "plan", "--team", "red", "--on", day, "--apply", "--json", "--seconds", "0.3")
            #expect(applied.status == 0, "\(applied.stderr)")
            let plan = try JSONOutput.decode(DayPlan.self, applied.stdout)
            let route = try #require(plan.routes.first { $0.personID == w.ids["Ann"] })
            #expect(route.visits.count == 3)

            let token = try await w.tool("person", "token", "issue", "ann@example.org").stdout.trimmingCharacters(
                in: .whitespacesAndNewlines)
            let service = ServiceProcess.run(
                databaseURL: url.connectionString, replicas: folder.appending(path: "replicas"), log: folder.path + "/service.log")
            try await service.start()
            defer { service.stopInBackground() }
            let home = folder.appending(path: "ann")
            #expect(try await WorkerTool.run(home, "login", "--server", service.url, "--token", token).status == 0)
            var onDevice: [LocalTaskView] = []
            _ = try await eventually(within: .seconds(30), every: .milliseconds(200)) {
                _ = try await WorkerTool.run(home, "sync")
                onDevice = try JSONOutput.decode(
                    [LocalTaskView].self, try await WorkerTool.run(home, ["tasks", "--on", day, "--json"]).stdout)
                return onDevice.count == 3 && onDevice.allSatisfy { $0.plannedStart != nil }
            }
            #expect(onDevice.map(\.id) == route.visits.map(\.taskID), "the planned order")
            for (task, visit) in zip(onDevice, route.visits) {
                #expect(abs(task.plannedStart!.timeIntervalSince(visit.starts)) < 0.01)
            }
            let text = try await WorkerTool.run(home, ["tasks", "--on", day]).stdout
            let first = Zone.utc.time(of: route.visits[0].starts).short
            #expect(text.contains("ETA") && text.contains(first), "\(text)")
        }
    }

    /// What the test reads of the worker's `tasks --json`.
    struct LocalTaskView: Decodable {
        var id: Int64
        var plannedStart: Date?
    }
}
