import ArgumentParser
import CentralStore
import Foundation
import TeamworkFormats
import TeamworkModel

struct ReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Where the work stands: counts by team, overdue and due soon, workloads, turnaround, conflicts.",
        subcommands: [Materials.self, TimesheetCommand.self, Labour.self]
    )
    @OptionGroup var connection: ConnectionOptions
    @Option(
        name: [.customLong("limit"), .customLong("overdue-limit")],
        help: "Show at most this many tasks in each list (overdue, due soon); the rest are counted.")
    var limit: Int = 20
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if limit < 0 { throw ValidationError("--limit must not be negative") }
    }

    func run() async throws {
        let (report, names) = try await connection.withStore { store in
            (
                try await store.report(limit: limit),
                output.json ? TaskCommand.Names() : try await TaskCommand.Names.load(store)
            )
        }
        if output.json { return try Output.json(report) }
        let statuses = TaskStatus.allCases.map(\.rawValue)
        Output.line(
            "Tasks: \(report.total)   completion rate: "
                + (report.completionRate.map { String(format: "%.1f%%", $0 * 100) } ?? "-"))
        Output.line()
        Output.table(
            ["TEAM"] + statuses.map { $0.uppercased() } + ["TOTAL", "OVERDUE"],
            report.teams.map { line in
                [line.teamSlug ?? "(personal)"] + statuses.map { String(line.counts[$0] ?? 0) } + [
                    String(line.total), String(line.overdue),
                ]
            } + [
                ["all"] + statuses.map { String(report.countsByStatus[$0] ?? 0) } + [
                    String(report.total), String(report.teams.map(\.overdue).reduce(0, +)),
                ]
            ])
        Output.line()
        for (tasks, count, title, none) in [
            (report.overdueTasks, report.overdueCount, "Overdue", "No overdue tasks."),
            (
                report.dueSoon, report.dueSoonCount, "Due in the next \(report.dueSoonHours) h",
                "Nothing due in the next \(report.dueSoonHours) h."
            ),
        ] {
            if count == 0 && tasks.isEmpty {
                Output.line(none)
            } else {
                Output.line("\(title) (\(count)):")
                TaskCommand.printTable(tasks, names: names, now: report.generatedAt)
                // Never hidden silently: a list cut at the limit says how many more there are.
                if count > tasks.count { Output.line("and \(count - tasks.count) more (--limit \(count) shows them all)") }
            }
            Output.line()
        }
        if report.workload.isEmpty {
            Output.line("Nobody holds open work.")
        } else {
            Output.line("Open work by person:")
            Output.table(
                ["PERSON", "ASSIGNED", "IN PROGRESS", "URGENT", "OVERDUE"],
                report.workload.map {
                    [$0.name, String($0.open), String($0.inProgress), String($0.urgent), String($0.overdue)]
                })
        }
        Output.line()
        if report.turnaround.isEmpty {
            Output.line("Nothing completed in the last \(report.turnaroundDays) days.")
        } else {
            Output.line("Assigned to completed, last \(report.turnaroundDays) days:")
            Output.table(
                ["TEAM", "COMPLETED", "MEDIAN"],
                report.turnaround.map {
                    [$0.teamSlug ?? "(personal)", String($0.completed), Self.hours($0.medianHours)]
                })
        }
        if !report.plans.isEmpty {
            Output.line()
            Output.line("Recurring plans:")
            Output.table(
                ["PLAN", "TITLE", "DUE IN 7 DAYS", "LAST DUE", "MISSED"],
                report.plans.map {
                    [String($0.planID), $0.title, String($0.dueThisWeek), Output.date($0.lastDue), $0.lastMissed ? "yes" : "-"]
                })
        }
        if !report.checklists.isEmpty {
            Output.line()
            Output.line("Checklists of tasks completed in the last \(report.turnaroundDays) days:")
            Output.table(
                ["CHECKLIST", "COMPLETED", "MISSING ITEMS", "FAILED ITEMS"],
                report.checklists.map {
                    [$0.name, String($0.completed), String($0.withMissing), String($0.withFailed)]
                })
        }
        Output.line()
        Output.line(
            "Field changes taken in: \(report.fieldChanges)   open conflicts: \(report.openConflicts)"
                + (report.openConflicts > 0 ? " (see `teamwork-manager conflicts`)" : ""))
    }

    /// `45 min`, `3.5 h`, `2.1 days`.
    static func hours(_ hours: Double) -> String {
        if hours < 1 { return "\(Int((hours * 60).rounded())) min" }
        if hours < 48 { return String(format: "%.1f h", hours) }
        return String(format: "%.1f days", hours / 24)
    }
}

extension ReportCommand {
    struct Materials: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "What was used on the tasks completed in a period: per part, or a line per task (--lines), for stock and invoicing.",
            discussion: """
                Days are the tasks' own (each task completed on its own clock); both ends count. Amounts are the \
                catalogue's prices of the day each line was recorded. --csv writes a table a spreadsheet opens \
                (formula-safe).
                """)
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var period: PeriodOptions
        @Flag(help: "A line per task and part, for invoicing.") var lines = false
        @Flag(help: "Write CSV.") var csv = false
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let (first, last) = try period.days()
            if csv && output.json { throw TeamworkError(.usage, "use --csv or --json, not both") }
            let uses = try await connection.withStore { store in
                try await store.materialsUsed(from: first, to: last, team: try await period.teamID(store))
            }
            if lines {
                if output.json { return try Output.json(uses) }
                let rows = uses.map { use in
                    let l = use.line
                    return [
                        String(use.taskID), use.title, use.completedOn, use.team ?? "", use.customer ?? "", l.partCode ?? "", l.name,
                        l.quantity, l.unit ?? "", l.unitPrice ?? "", l.currency ?? "", l.total ?? "", l.personName ?? String(l.personID),
                    ]
                }
                let headers = [
                    "task", "title", "completed", "team", "customer", "part", "name", "quantity", "unit", "unit_price", "currency", "total",
                    "worker",
                ]
                if csv { return FileHandle.standardOutput.write(Data(CSVTable.render([headers] + rows).utf8)) }
                if rows.isEmpty { return Output.line("Nothing was used on tasks completed from \(first) to \(last).") }
                return Output.table(headers.map { $0.uppercased() }, rows.map { $0.map(TerminalText.inline) })
            }
            let summary = MaterialUse.summary(uses)
            if output.json { return try Output.json(summary) }
            let headers = ["part", "name", "quantity", "unit", "amount", "currency", "tasks"]
            let rows = summary.map {
                [$0.partCode ?? "", $0.name, $0.quantity, $0.unit ?? "", $0.amount ?? "", $0.currency ?? "", String($0.tasks)]
            }
            if csv { return FileHandle.standardOutput.write(Data(CSVTable.render([headers] + rows).utf8)) }
            if rows.isEmpty { return Output.line("Nothing was used on tasks completed from \(first) to \(last).") }
            Output.table(headers.map { $0.uppercased() }, rows.map { $0.map(TerminalText.inline) })
            for (currency, total) in MaterialLine.totals(uses.map(\.line)) { Output.line("Total \(currency): \(total)") }
        }
    }
}

extension ReportCommand {
    struct TimesheetCommand: AsyncParsableCommand {
        /// A person's line: each day's time, then the week's sums.
        static func row(_ person: Timesheet.Person) -> [String] {
            let days: [String] = person.days.map { $0.total == 0 ? "-" : TimeOnJob.hours($0.total) }
            let sums: [String] = [
                TimeOnJob.hours(person.work), TimeOnJob.hours(person.travel), TimeOnJob.hours(person.total),
                TimeOnJob.hours(person.expected), person.overtime == 0 ? "-" : TimeOnJob.hours(person.overtime),
                person.open == 0 ? "-" : String(person.open),
            ]
            return [TerminalText.inline(person.name)] + days + sums
        }

        static let configuration = CommandConfiguration(
            commandName: "timesheet",
            abstract: "A week of time on the job per person and day, against their working hours, with overtime: for payroll.",
            discussion: """
                Everyone active in a team (of --team when given), and anyone else with time that week. A day's \
                time is the work and travel entries that lie in it on their task's clock, as the time that \
                passed (a day the clocks change on has 23 or 25 hours); an entry over midnight counts on both \
                days. Overtime is a day's time beyond the hours expected of the person that day (their working \
                week and its exceptions; with none set, --hours Monday to Friday). Entries still running are \
                counted nowhere and shown as open. --csv writes a row per person and day (formula-safe). \
                --close WEEK closes payroll through that week's Sunday (after the weeks closed before it): no \
                time on those days is recorded, changed or removed from then on, by anyone; the sheet says who \
                closed it and when.
                """)
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "The ISO week, like 2026-W44 (default: the week --close closes).") var week: String?
        @Option(help: "Close payroll through this ISO week's Sunday, then show it.") var close: String?
        @Option(help: "Only this team's members (its slug).") var team: String?
        @Option(help: "The hours of someone with no working week set, Monday to Friday.") var hours = DayHours.usual.description
        @Flag(help: "Write CSV: a row per person and day, in minutes.") var csv = false
        @OptionGroup var output: OutputOptions

        func run() async throws {
            if csv && output.json { throw TeamworkError(.usage, "use --csv or --json, not both") }
            let usual = try DayHours(parsing: hours, field: "--hours")
            guard let week = week ?? close else { throw TeamworkError(.usage, "give --week WEEK (or --close WEEK)") }
            _ = try Timesheet.monday(ofWeek: week)
            if let close { _ = try Timesheet.monday(ofWeek: close) }
            let sheet = try await connection.withStore { store in
                let teamID = try await team.asyncMap { try await store.team(reference: $0).id }
                if let close { _ = try await store.closePayroll(week: close) }
                return try await store.timesheet(week: week, team: teamID, usual: usual)
            }
            if output.json { return try Output.json(sheet) }
            if csv { return FileHandle.standardOutput.write(Data(CSVTable.render(sheet.csvRows).utf8)) }
            if sheet.people.isEmpty { return Output.line("Nobody to show in \(sheet.week).") }
            Output.line("Week \(sheet.week), \(sheet.days.first!) to \(sheet.days.last!): hours worked and travelled per day.")
            let headers =
                ["PERSON"] + sheet.days.map { String($0.weekdayName.prefix(3)) + " " + String(format: "%02d", $0.day) }
                + ["WORK", "TRAVEL", "TOTAL", "EXPECTED", "OVERTIME", "OPEN"]
            Output.table(headers, sheet.people.map(Self.row))
            if let closed = sheet.closed { Output.line(closed.sentence) }
            let open = sheet.people.reduce(0) { $0 + $1.open }
            if open > 0 {
                Output.line("\(open) entr\(open == 1 ? "y is" : "ies are") still running (started, not completed): counted once they end.")
            }
        }
    }
}

extension ReportCommand {
    struct Labour: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The time on the tasks completed in a period, a line per task, person and kind: for invoicing.",
            discussion: """
                Days are the tasks' own (each task completed on its own clock); both ends count. Minutes are whole \
                minutes from an entry's start's minute to its end's, as billing's labour counts them. --csv writes a \
                table a spreadsheet opens (formula-safe).
                """)
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var period: PeriodOptions
        @Flag(help: "Write CSV.") var csv = false
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let (first, last) = try period.days()
            if csv && output.json { throw TeamworkError(.usage, "use --csv or --json, not both") }
            let uses = try await connection.withStore { store in
                try await store.labour(from: first, to: last, team: try await period.teamID(store))
            }
            if output.json { return try Output.json(uses) }
            let rows = TimeUse.csvRows(uses)
            if csv { return FileHandle.standardOutput.write(Data(CSVTable.render(rows).utf8)) }
            if uses.isEmpty { return Output.line("No time on tasks completed from \(first) to \(last).") }
            Output.table(rows[0].map { $0.uppercased() }, rows.dropFirst().map { $0.map(TerminalText.inline) })
            let totals = TimeEntry.totals(uses.map(\.entry))
            Output.line("Labour: \(TimeOnJob.hours(totals.work)) work, \(TimeOnJob.hours(totals.travel)) travel.")
        }
    }
}

/// A report's period of completed tasks: its first and last day (each task on its own clock), and a team.
struct PeriodOptions: ParsableArguments {
    @Option(help: "The first day, like 2026-12-01.") var from: String
    @Option(help: "The last day, like 2026-12-07.") var to: String
    @Option(help: "Only this team's tasks (its slug).") var team: String?

    func days() throws -> (LocalDate, LocalDate) {
        (try LocalDate(parsing: from, field: "--from"), try LocalDate(parsing: to, field: "--to"))
    }

    func teamID(_ store: CentralStore) async throws -> Int64? {
        try await team.asyncMap { try await store.team(reference: $0).id }
    }
}
