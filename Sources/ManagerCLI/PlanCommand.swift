import ArgumentParser
import CentralStore
import Foundation
import TeamworkModel

/// Recurring work: `plan add` sets up a year of maintenance with one command;
/// generation never makes a task twice (docs/dispatch.md, "Recurring work").
struct PlanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract:
            "Recurring work: a task for each day a rule gives, on the plan's clock (its site's zone, else its team's, else its assignee's default team's).",
        subcommands: [
            Add.self, List.self, Show.self, Update.self, Pause.self, Resume.self, Skip.self, Move.self,
            Generate.self, Remove.self,
        ]
    )

    /// What a plan's tasks are: who, where, what.
    struct Work: ParsableArguments {
        @Option(help: "What needs doing.") var title: String?
        @Option(help: "Details for the worker.") var description: String?
        @Option(help: "low, normal, high or urgent.") var priority: String?
        @Option(help: "Team slug or id (free-floating for the team without --assignee).") var team: String?
        @Option(help: "Person id or email (a member of --team when both are given).") var assignee: String?
        @Option(help: "Location id of the site (its zone, if it has one, rules the plan's clock).") var location: Int64?
        @Option(help: "Skills whoever goes must have, comma-separated.") var requires: String?
        @Option(help: "A checklist each occurrence carries, by name (\"\" for none): the version published when it is made.")
        var checklist: String?
    }

    /// When: the rule and the day's window.
    struct When: ParsableArguments {
        @Option(help: "RFC 5545 RRULE subset: FREQ=MONTHLY;BYDAY=1MO (FREQ, INTERVAL, COUNT, UNTIL, BYDAY, BYMONTHDAY, BYMONTH).")
        var rrule: String?
        @Option(help: "First day the rule counts from: 2026-12-01.") var start: String?
        @Option(
            help:
                "When each occurrence's window starts, on the plan's wall clock: 08:00. A time the clocks skip becomes the moment they change (02:30 → 03:00); a repeated one is the earlier."
        )
        var windowStart: String?
        @Option(help: "How long the window is: PT2H, PT90M, P1D.") var duration: String?
        @Option(help: "Minutes on site of each occurrence, for the day planner (1 to 720; default: the team's).")
        var minutesOnSite: Int?
        @Option(help: "Due at 23:59:59 this many days after the occurrence's day (default 0: the same day).") var dueDays: Int?
        @Option(help: "How many days ahead occurrences are made (default 30).") var horizon: Int?
    }

    static func resolve(_ work: Work, _ store: CentralStore) async throws -> (team: Int64?, assignee: Int64?) {
        (
            try await work.team.asyncMap { try await store.team(reference: $0).id },
            try await work.assignee.asyncMap { try await store.person(reference: $0).id }
        )
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a plan and make its occurrences up to its horizon.",
            discussion: """
                Example: a substation inspection every first Monday, 08:00-10:00 on the team's clock, 60 days ahead:
                  teamwork-manager plan add --title "Substation inspection" --team red --location 1 \\
                    --rrule 'FREQ=MONTHLY;BYDAY=1MO' --start 2026-12-01 --window-start 08:00 --duration PT2H --horizon 60
                """
        )
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var work: Work
        @OptionGroup var when: When
        @OptionGroup var output: OutputOptions

        func run() async throws {
            guard let title = work.title, let rrule = when.rrule, let start = when.start, let windowStart = when.windowStart,
                let duration = when.duration
            else {
                throw TeamworkError(.usage, "plan add needs --title, --rrule, --start, --window-start and --duration")
            }
            if work.team == nil && work.assignee == nil { throw TeamworkError(.usage, "give --team, --assignee, or both") }
            let (plan, generated) = try await connection.withStore { store in
                let (teamID, assigneeID) = try await PlanCommand.resolve(work, store)
                let new = try NewPlan(
                    title: title, description: work.description ?? "", priority: try work.priority.map(Priority.parse) ?? .normal,
                    assignment: try Assignment(teamID: teamID, assigneeID: assigneeID), locationID: work.location,
                    requiredSkills: try Skills.parse(work.requires ?? "", most: Skills.mostPerTask, field: "requires"),
                    rule: rrule, startsOn: try LocalDate(parsing: start, field: "start"),
                    windowStart: try LocalTime(parsing: windowStart, field: "window-start"),
                    durationMinutes: try NewPlan.minutes(duration), dueDays: when.dueDays ?? 0, horizonDays: when.horizon ?? 30,
                    checklist: work.checklist.flatMap { $0.isEmpty ? nil : $0 }, minutesOnSite: when.minutesOnSite)
                let plan = try await store.addPlan(new)
                return (plan, try await store.generatePlans(only: plan.id).first)
            }
            if output.json { return try Output.json(plan) }
            Output.line("Added plan \(plan.id): \(plan.title) (\(plan.rule), \(plan.windowStart) \(plan.timeZone))")
            if let generated { PlanCommand.report([generated]) }
        }
    }

    static func report(_ results: [PlanGeneration]) {
        for result in results {
            if let error = result.error {
                Output.line("plan \(result.planID) (\(TerminalText.inline(result.title))): nothing made: \(error)")
            } else {
                Output.line("plan \(result.planID) (\(TerminalText.inline(result.title))): \(quantity(result.made, "task")) made")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List plans.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let plans = try await connection.withStore { try await $0.listPlans() }
            if output.json { return try Output.json(plans) }
            Output.table(
                ["ID", "TITLE", "RULE", "WINDOW", "ZONE", "STATE"],
                plans.map { plan in
                    [
                        String(plan.id), plan.title, plan.rule, "\(plan.windowStart) +\(plan.durationMinutes) min", plan.timeZone,
                        plan.pausedAt == nil ? "active" : "paused",
                    ]
                })
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a plan, its next days, and the tasks it made (kept ones marked).")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Plan id.") var id: Int64
        @Option(help: "How many coming days to list.") var next: Int = 5
        @OptionGroup var output: OutputOptions

        struct Occurrence: Encodable {
            var day: LocalDate
            var taskID: Int64
            var status: TaskStatus
            /// Cancelled because the plan changed (or the day was skipped or moved), and made anew if due.
            var superseded: Bool
            var cancelReason: String?
            /// Made by an earlier version of the plan and touched since: it stands for its day.
            var kept: Bool
        }

        struct Details: Encodable {
            var plan: Plan
            var upcoming: [LocalDate]
            var occurrences: [Occurrence]
        }

        func run() async throws {
            let (details, names, site) = try await connection.withStore { store in
                let plan = try await store.plan(id: id)
                let site = try await plan.locationID.asyncMap { try await store.location(id: $0) }
                let today = plan.zone.date(of: Date())
                let upcoming = try plan.occurrences(from: today, through: today.adding(days: 3_660)).prefix(max(0, next)).map(\.on)
                let made = try await store.occurrences(ofPlan: id).map { row in
                    Occurrence(
                        day: row.day, taskID: row.task.id, status: row.task.status, superseded: row.superseded,
                        cancelReason: row.reason, kept: !row.superseded && row.task.updatedAt < plan.updatedAt && row.task.version > 1)
                }
                return (
                    Details(plan: plan, upcoming: Array(upcoming), occurrences: made),
                    output.json ? TaskCommand.Names() : try await TaskCommand.Names.load(store),
                    site
                )
            }
            if output.json { return try Output.json(details) }
            let p = details.plan
            Output.details([
                ("id", String(p.id)), ("title", p.title), ("rule", p.rule), ("starts", p.startsOn.description),
                ("team", p.teamID.map { names.teams[$0] ?? String($0) } ?? "none (personal work)"),
                ("assignee", p.assigneeID.map { names.people[$0] ?? String($0) } ?? "nobody (free for the team)"),
                ("site", site.map(TaskCommand.Show.describe) ?? "none"), ("priority", p.priority.rawValue),
                ("needs", p.requiredSkills.isEmpty ? "no particular skill" : p.requiredSkills.joined(separator: ", ")),
                ("window", "\(p.windowStart) for \(p.durationMinutes) min, \(p.timeZone)"),
                ("on site", p.minutesOnSite.map { "\($0) min" } ?? "the team's default"),
                ("due", p.dueDays == 0 ? "end of the day" : "end of the day + \(quantity(p.dueDays, "day"))"),
                ("horizon", "\(p.horizonDays) days"),
                ("state", p.pausedAt.map { "paused since \(Output.date($0, in: p.zone))" } ?? "active"),
                ("skipped", p.exceptions.filter { $0.movedTo == nil }.map(\.occursOn.description).joined(separator: ", ").nonEmpty ?? "-"),
                (
                    "moved",
                    p.exceptions.compactMap { e in e.movedTo.map { "\(e.occursOn) → \($0)" } }.joined(separator: ", ").nonEmpty ?? "-"
                ),
                ("next", details.upcoming.map(\.description).joined(separator: ", ").nonEmpty ?? "-"),
                ("checklist", p.checklist ?? "-"),
                ("version", String(p.version)),
            ])
            Output.line()
            Output.table(
                ["DAY", "TASK", "STATUS", "NOTE"],
                details.occurrences.map { o in
                    [
                        o.day.description, String(o.taskID), o.status.rawValue,
                        o.superseded ? (o.cancelReason ?? "superseded") : (o.kept ? "kept (touched before the plan changed)" : ""),
                    ]
                })
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Change a plan: occurrences made from now on follow it; made, untouched ones from --from on are redone; touched ones stand."
        )
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Plan id.") var id: Int64
        @OptionGroup var work: Work
        @OptionGroup var when: When
        @Option(help: "Redo the occurrences already made and untouched from this day on (default and earliest: today on the plan's clock).")
        var from: String?
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let (plan, cancelled, generated) = try await connection.withStore { store in
                let (teamID, assigneeID) = try await PlanCommand.resolve(work, store)
                let skills = try work.requires.map { try Skills.parse($0, most: Skills.mostPerTask, field: "requires") }
                let minutes = try when.duration.map { try NewPlan.minutes($0) }
                let (plan, cancelled) = try await store.updatePlan(
                    id: id,
                    { plan in
                        if let title = work.title { plan.title = title }
                        if let description = work.description { plan.description = description }
                        if let priority = work.priority { plan.priority = try Priority.parse(priority) }
                        if work.team != nil { plan.teamID = teamID }
                        if work.assignee != nil { plan.assigneeID = assigneeID }
                        if let location = work.location { plan.locationID = location }
                        if let skills { plan.requiredSkills = skills }
                        if let rrule = when.rrule { plan.rule = rrule }
                        if let start = when.start { plan.startsOn = try LocalDate(parsing: start, field: "start") }
                        if let windowStart = when.windowStart {
                            plan.windowStart = try LocalTime(parsing: windowStart, field: "window-start")
                        }
                        if let minutes { plan.durationMinutes = minutes }
                        if let dueDays = when.dueDays { plan.dueDays = dueDays }
                        if let horizon = when.horizon { plan.horizonDays = horizon }
                        if let minutes = when.minutesOnSite { plan.minutesOnSite = minutes }
                        if let checklist = work.checklist { plan.checklist = checklist.isEmpty ? nil : checklist }
                    }, from: try from.map { try LocalDate(parsing: $0, field: "from") })
                return (plan, cancelled, try await store.generatePlans(only: id).first)
            }
            if output.json { return try Output.json(plan) }
            Output.line("Updated plan \(plan.id) (version \(plan.version)): \(quantity(cancelled, "untouched occurrence")) cancelled")
            if let generated { PlanCommand.report([generated]) }
        }
    }

    struct Pause: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Pause a plan: its untouched occurrences from today on (today's included) are cancelled; nothing new is made.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Plan id.") var id: Int64
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let (plan, cancelled) = try await connection.withStore { store in
                try await store.updatePlan(id: id, { $0.pausedAt = $0.pausedAt ?? Date() }, reason: "plan paused")
            }
            if output.json { return try Output.json(plan) }
            Output.line("Paused plan \(id): \(quantity(cancelled, "untouched occurrence")) cancelled")
        }
    }

    struct Resume: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Resume a paused plan: its occurrences are made again from today (days passed while paused are not).")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Plan id.") var id: Int64
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let (plan, generated) = try await connection.withStore { store in
                let (plan, _) = try await store.updatePlan(id: id, { $0.pausedAt = nil })
                return (plan, try await store.generatePlans(only: id))
            }
            if output.json { return try Output.json(plan) }
            Output.line("Resumed plan \(id)")
            PlanCommand.report(generated)
        }
    }

    struct Skip: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Skip one day the rule gives (its task, if made and untouched, is cancelled; a touched one stays).")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Plan id.") var id: Int64
        @Argument(help: "The day the rule gives: 2026-12-07.") var day: String
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let day = try LocalDate(parsing: day, field: "day")
            let (plan, cancelled) = try await connection.withStore { try await $0.setException(plan: id, day: day, movedTo: nil) }
            if output.json { return try Output.json(plan) }
            Output.line("Skipped \(day) of plan \(id)\(cancelled > 0 ? ": its task was cancelled" : "")")
        }
    }

    struct Move: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Move one day the rule gives to another day, same time on the plan's clock (a touched task stays put; a new day already past is not made)."
        )
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Plan id.") var id: Int64
        @Argument(help: "The day the rule gives: 2026-12-07.") var day: String
        @Argument(help: "The day it happens instead: 2026-12-08.") var newDay: String
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let (day, target) = (try LocalDate(parsing: day, field: "day"), try LocalDate(parsing: newDay, field: "new day"))
            let (plan, generated) = try await connection.withStore { store in
                let (plan, _) = try await store.setException(plan: id, day: day, movedTo: target)
                return (plan, try await store.generatePlans(only: id))
            }
            if output.json { return try Output.json(plan) }
            Output.line("Moved \(day) of plan \(id) to \(target)")
            PlanCommand.report(generated)
        }
    }

    struct Generate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make every active plan's occurrences up to its horizon (or --until a day); each once, however often it runs.",
            discussion:
                "`teamwork-service run` does this every --plan-interval seconds (default 3600) and right after a plan changes; this is for a scheduler or by hand."
        )
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Make occurrences through this day instead of each plan's horizon: 2027-12-31.") var until: String?
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let until = try until.map { try LocalDate(parsing: $0, field: "until") }
            let results = try await connection.withStore { try await $0.generatePlans(until: until) }
            if output.json { return try Output.json(results) }
            if results.isEmpty { return Output.line("No active plans.") }
            PlanCommand.report(results)
            if results.contains(where: { $0.error != nil }) { throw TeamworkError.conflict("some plans could not be generated (above)") }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a plan: its untouched occurrences from today on are cancelled; made tasks keep their history.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Plan id.") var id: Int64

        @OptionGroup var output: OutputOptions

        struct Removed: Encodable {
            var planID: Int64
            var cancelled: Int
        }

        func run() async throws {
            let cancelled = try await connection.withStore { try await $0.removePlan(id: id) }
            if output.json { return try Output.json(Removed(planID: id, cancelled: cancelled)) }
            Output.line("Removed plan \(id): \(quantity(cancelled, "untouched occurrence")) cancelled")
        }
    }
}

extension String {
    var nonEmpty: String? { isEmpty ? nil : self }
}
