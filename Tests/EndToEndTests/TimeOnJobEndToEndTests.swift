import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// Time on the job, from the worker's device to payroll: recorded offline (`teamwork-worker time`),
/// corrected, checked on the device with the rules the master uses, taken in once, corrected by a
/// manager and counted in the week's timesheet. Every time is set: nothing reads the wall clock's day.
@Suite("Time on the job, end to end")
struct TimeOnJobEndToEndTests {
    @Test func workAndTravelRecordedOfflineArriveOnceHostileTimesChangeNothingAndTheTimesheetCountsThem() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let (manager, service, worker) = MaterialsEndToEndTests.tools(setup)
            let made = try await manager.ok(
                "task", "create", "--title", "rewire board", "--team", "red", "--assignee", "ann@example.org", "--json")
            let task = try JSONOutput.decode(FieldTask.self, made)
            let id = String(task.id)
            try await service("replicate")
            #expect(try await worker("login", "--server", setup.server.url, "--token", setup.annToken).status == 0)

            // Offline from here on: her work, corrected once, and her travel there.
            try await setup.server.stop()
            #expect(try await worker("start", id).status == 0)
            for arguments in [
                ["time", id, "--start", "\(RecentFriday.day)T08:00:00Z", "--end", "\(RecentFriday.day)T10:00:00Z"],
                ["time", id, "--start", "\(RecentFriday.day)T08:00:00Z", "--minutes", "150"],
                ["time", id, "--travel", "--minutes", "25", "--end", "\(RecentFriday.day)T08:00:00Z"],
            ] {
                let run = try await WorkerTool.run(setup.annHome, arguments)
                #expect(run.status == 0 && run.stdout.contains("queued"), "\(arguments): \(run.stderr)")
            }
            // Hostile times are bad input (65): one line, nothing queued.
            for (arguments, message) in [
                (
                    ["time", id, "--start", "\(RecentFriday.day)T10:00:00Z", "--end", "\(RecentFriday.day)T09:00:00Z"],
                    "ends after it starts"
                ),
                (["time", id, "--start", "\(RecentFriday.day)T08:00:00Z", "--end", "\(RecentFriday.next)T08:00:01Z"], "at most 24 hours"),
                (["time", id, "--minutes", "1441"], "--minutes is 1 to 1440"),
                (["time", id, "--minutes", "0"], "--minutes is 1 to 1440"),
                (["time", id, "--start", "yesterday", "--end", "10:00"], "--start must be"),
                (["time", id, "--start", "25:00", "--end", "26:00"], "must be a time of day like 08:00"),
                (["time", id, "--clear", "--minutes", "5"], "--clear takes no times"),
                (["time", id, "--start", "08:00"], "give two of --start, --end and --minutes"),
                (["time", id, "--start", "1999-12-31T22:00:00Z", "--end", "1999-12-31T23:00:00Z"], "after 2000-01-01"),
            ] {
                let refused = try await WorkerTool.run(setup.annHome, arguments)
                #expect(
                    refused.status == TeamworkError.Code.invalidInput.exitStatus && refused.stderr.contains(message)
                        && refused.errorLines.count == 1, "\(arguments): \(refused.status) \(refused.stderr)")
            }
            let mine = try await worker("time", id)
            #expect(
                mine.stdout.contains("work") && mine.stdout.contains("2:30") && mine.stdout.contains("travel")
                    && mine.stdout.contains("0:25") && mine.stdout.contains("not yet") && !mine.stdout.contains("2:00"), "\(mine.stdout)")
            let status = try await worker("status")
            #expect(status.stdout.contains("Queued: 4 "), "a start and three entries: \(status.stdout)")

            // Back online: synced twice and taken in twice; nothing doubles, and her entries replace the automatic one.
            try await setup.server.start()
            #expect(try await worker("sync").status == 0)
            #expect(try await worker("sync").status == 0)
            try await service("listen")
            try await service("listen")
            func entries() async throws -> [String] {
                try await CentralStore.withStore(setup.url) { try await $0.timeEntries(ofTask: task.id) }.map {
                    "\($0.kind.rawValue) \(ISODate.format($0.startedAt)) \($0.minutes.map(String.init) ?? "open") \($0.source)"
                }
            }
            let recorded = ["travel \(RecentFriday.day)T07:35:00Z 25 worker", "work \(RecentFriday.day)T08:00:00Z 150 worker"]
            #expect(try await entries() == recorded)
            let ledger = try await CentralStore.withStore(setup.url) { store in
                try await store.rows("SELECT count(*)::int FROM field_changes WHERE task_id = \(task.id) AND operation = 'time'")
                    .map { try $0.decode(Int.self) }
            }
            #expect(ledger == [3])

            // Her completion leaves her own entries as she set them; the manager sees the labour.
            #expect(try await worker("complete", id, "--note", "rewired").status == 0)
            #expect(try await worker("sync").status == 0)
            try await service("listen")
            #expect(try await entries() == recorded)
            let shown = try await manager.ok("task", "show", id)
            #expect(shown.contains("Time:") && shown.contains("Labour: 2:30 work, 0:25 travel."), "\(shown)")
            // Invoicing's lines: the day the task was completed, as the master has it (not the wall clock's day).
            let completed = try await CentralStore.withStore(setup.url) { try await $0.task(id: task.id).completedAt }
            let day = Zone.utc.date(of: try #require(completed)).description
            let invoice = try await manager.ok("report", "labour", "--from", day, "--to", day, "--team", "red", "--csv")
            let lines = invoice.split(separator: "\r\n").map(String.init)
            #expect(lines.first == "task,title,completed,team,customer,kind,worker,started,ended,minutes,source", "\(invoice)")
            let fields: [String] = lines.dropFirst().map { line in
                let cells = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                return [cells[0], cells[5], cells[9], cells[10]].joined(separator: " ")
            }
            #expect(fields == ["\(id) travel 25 worker", "\(id) work 150 worker"], "\(invoice)")

            // A manager corrects the finished job; the history names them, with the entry before and after.
            let corrected = try await manager.ok(
                "task", "time", id, "--start", "\(RecentFriday.day)T08:00:00Z", "--end", "\(RecentFriday.day)T11:00:00Z", "--actor",
                "max@example.org")
            #expect(corrected.contains("Labour: 3:00 work, 0:25 travel."), "\(corrected)")
            let history = try await manager.ok("task", "history", id)
            #expect(
                history.contains("max Test") && history.contains("\(RecentFriday.day)T10:30:00Z")
                    && history.contains("\(RecentFriday.day)T11:00:00Z"),
                "\(history)")
            let after = try await entries()
            for (arguments, code) in [
                (
                    ["task", "time", id, "--start", "\(RecentFriday.day)T10:00:00Z", "--end", "\(RecentFriday.day)T09:00:00Z"],
                    TeamworkError.Code.invalidInput
                ),
                (
                    ["task", "time", id, "--start", "\(RecentFriday.day)T08:00:00Z", "--end", "\(RecentFriday.next)T09:00:00Z"],
                    .invalidInput
                ),
                (["task", "time", id, "--minutes", "-5"], .usage),
                (["task", "time", id, "--person", "nobody@example.org", "--minutes", "5"], .notFound),
            ] {
                let refused = try await manager.run(arguments + ["--actor", "max@example.org"])
                #expect(refused.status == code.exitStatus && refused.errorLines.count == 1, "\(arguments): \(refused.stderr)")
            }
            #expect(try await entries() == after, "refusals changed nothing")

            // Payroll's week: her Friday, work and travel, beyond nothing (within 07:00-16:00).
            let csv = try await manager.ok("report", "timesheet", "--week", RecentFriday.week, "--team", "red", "--csv")
            let friday = csv.split(separator: "\r\n").first {
                $0.hasPrefix("\(setup.world.ann.id),") && $0.contains(RecentFriday.day.description)
            }
            #expect(friday?.hasSuffix(",180,25,205,540,0") == true, "\(csv)")
            let table = try await manager.ok("report", "timesheet", "--week", RecentFriday.week)
            #expect(table.contains("Week \(RecentFriday.week)") && table.contains("3:25"), "\(table)")
            let bad = try await manager.run(["report", "timesheet", "--week", "2026-53"])
            #expect(bad.status == TeamworkError.Code.invalidInput.exitStatus && bad.errorLines.count == 1, "\(bad.stderr)")

            // Payroll closes the week, naming who did: its days keep their time, the manager's correction included.
            let closing = try await manager.ok("report", "timesheet", "--close", RecentFriday.week, "--actor", "max@example.org")
            let sunday = RecentFriday.day.adding(days: 2)
            #expect(closing.contains("Payroll is closed through \(sunday) (week \(RecentFriday.week)), by max Test"), "\(closing)")
            let late = try await manager.run(
                ["task", "time", id, "--start", "\(RecentFriday.day)T08:00:00Z", "--end", "\(RecentFriday.day)T12:00:00Z"]
                    + ["--actor", "max@example.org"])
            #expect(
                late.status == TeamworkError.Code.conflict.exitStatus && late.stderr.contains("payroll closed the days up to \(sunday)")
                    && late.errorLines.count == 1, "\(late.stderr)")
            let twice = try await manager.run(["report", "timesheet", "--close", RecentFriday.week, "--actor", "max@example.org"])
            #expect(twice.status == TeamworkError.Code.conflict.exitStatus && twice.stderr.contains("already"), "\(twice.stderr)")
            #expect(try await entries() == after, "nothing changed on the closed days")
        }
    }

    /// Time and a line recorded on a task that moved to another team meanwhile are kept for the
    /// dispatcher (the conflicts inbox), not dropped; accepting them records them as the worker gave
    /// them, as the manager's correction.
    @Test func timeAndAUseSetAsideBecauseTheTaskMovedAreAcceptedByTheDispatcherAsTheWorkerGaveThem() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let (manager, service, worker) = MaterialsEndToEndTests.tools(setup)
            let made = try await manager.ok(
                "task", "create", "--title", "moved meter", "--team", "red", "--assignee", "ann@example.org", "--json")
            let task = try JSONOutput.decode(FieldTask.self, made)
            let id = String(task.id)
            try await service("replicate")
            #expect(try await worker("login", "--server", setup.server.url, "--token", setup.annToken).status == 0)
            #expect(
                try await worker("time", id, "--start", "\(RecentFriday.day)T08:00:00Z", "--end", "\(RecentFriday.day)T09:15:00Z").status
                    == 0)
            #expect(try await worker("used", id, "--line", "Tape", "2").status == 0)
            // The dispatcher gives the job to the blue team before her changes reach the master.
            _ = try await manager.ok("task", "assign", id, "--team", "blue", "--assignee", "cy@example.org")
            #expect(try await worker("sync").status == 0)
            try await service("listen")
            let listed = try await manager.ok("conflicts", "--task", id, "--json")
            let conflicts = try JSONOutput.decode([FieldConflict].self, listed)
            #expect(Set(conflicts.map(\.operation)) == ["time", "use"] && conflicts.allSatisfy { $0.rule == "moved" }, "\(listed)")
            #expect(try await CentralStore.withStore(setup.url) { try await $0.timeEntries(ofTask: task.id) }.isEmpty)

            for conflict in conflicts {
                let accepted = try await manager.ok("conflicts", "accept", String(conflict.id), "--actor", "max@example.org")
                #expect(accepted.contains("as they gave it"), "\(accepted)")
                let again = try await manager.run(["conflicts", "accept", String(conflict.id), "--actor", "max@example.org"])
                #expect(again.status == TeamworkError.Code.conflict.exitStatus && again.errorLines.count == 1, "\(again.stderr)")
            }
            let (time, lines) = try await CentralStore.withStore(setup.url) { store in
                (try await store.timeEntries(ofTask: task.id), try await store.materials(ofTask: task.id))
            }
            #expect(
                time.map { "\($0.kind.rawValue) \($0.minutes ?? -1) \($0.personID) \($0.source)" } == [
                    "work 75 \(setup.world.ann.id) manager"
                ])
            #expect(lines.map { "\($0.name) \($0.quantity) \($0.personID)" } == ["Tape 2 \(setup.world.ann.id)"])
            let history = try await manager.ok("task", "history", id)
            #expect(
                history.contains("max Test") && history.contains("\(RecentFriday.day)T09:15:00Z") && history.contains("Tape"), "\(history)")
        }
    }
}
