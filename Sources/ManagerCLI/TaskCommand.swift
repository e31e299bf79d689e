import ArgumentParser
import CentralStore
import Foundation
import TeamworkModel

struct TaskCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "task",
        abstract: "Create, list, change and follow the master list's tasks.",
        subcommands: [
            Create.self, List.self, Show.self, Update.self, Assign.self, Cancel.self, Reopen.self, Delete.self,
            History.self, Import.self, Checklist.self, Used.self, Time.self, Attachments.self, Messages.self,
        ]
    )

    /// Team slugs and people's names, to show instead of ids.
    typealias Names = DisplayNames

    /// Times on each task's own wall clock; the zone's abbreviation is shown when the listing spans
    /// more than one zone, else named once below the table.
    static func printTable(_ tasks: [FieldTask], names: Names, now: Date) {
        let windows = tasks.contains { $0.window != nil }
        let zones = Set(tasks.map(\.timeZone))
        var header = ["ID", "DUE"]
        if windows { header.append("WINDOW") }
        header += ["PRIORITY", "STATUS", "TEAM", "ASSIGNEE", "TITLE"]
        Output.table(
            header,
            tasks.map { task in
                let zone = task.zone
                var row: [String] = [
                    String(task.id), Output.due(task.dueAt, in: zone, withZone: zones.count > 1) + (task.isLate(at: now) ? " !" : ""),
                ]
                if windows { row.append(task.window.map { $0.compact(in: zone, withZone: zones.count > 1) } ?? "-") }
                let team: String = task.teamID.map { names.teams[$0] ?? String($0) } ?? "-"
                let assignee: String = task.assigneeID.map { names.people[$0] ?? String($0) } ?? "-"
                row += [task.priority.rawValue, task.status.rawValue, team, assignee, task.title]
                return row
            })
        if zones.count == 1, let zone = zones.first, zone != "UTC", !tasks.isEmpty { Output.line("Times in \(zone).") }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a task for a team, a member of a team, or one person."
        )
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "What needs doing.") var title: String
        @Option(help: "Details for the worker.") var description: String = ""
        @Option(help: "low, normal, high or urgent.") var priority: String = "normal"
        @Option(help: "Team slug or id (free-floating for the team without --assignee).") var team: String?
        @Option(help: "Person id or email (a member of --team when both are given).") var assignee: String?
        @Option(help: "Location id of the task site.") var location: Int64?
        @Option(
            help:
                "Due date: 2026-12-01 (the end of that day) or 2026-12-01T17:00, on the task's wall clock (its site's zone, else its team's, else its assignee's default team's, else UTC); with Z or +01:00 as given."
        )
        var due: String?
        @Option(help: "Skills whoever goes must have, comma-separated: electrical,climbing.") var requires: String = ""
        @Option(
            help:
                "Appointment window, an ISO 8601 interval on the task's wall clock: 2026-12-01T09:00/PT3H or 2026-12-01T09:00/2026-12-01T12:00."
        )
        var window: String?
        @Option(help: "A checklist the worker fills in, by name (its latest version; the task keeps it).") var checklist: String?
        @Option(help: "Minutes on site (1 to 720; default: the team's).") var duration: Int?
        @Option(help: "The customer (id or email) its messages go to, when not its site's.") var customer: String?
        @Option(help: ArgumentHelp(stringLiteral: DeclaredValues.help)) var set: [String] = []
        @Flag(help: "Assign even if the assignee lacks a required skill (the history records it).") var force = false
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let declared = try DeclaredValues(assignments: set)
            let priority = try Priority.parse(priority)
            let requiredSkills = try Skills.parse(requires, most: Skills.mostPerTask, field: "requires")
            if team == nil && assignee == nil { throw TeamworkError(.usage, "give --team, --assignee, or both") }
            let task = try await connection.withStore { store in
                let teamID = try await team.asyncMap { try await store.team(reference: $0).id }
                let assigneeID = try await assignee.asyncMap { try await store.person(reference: $0).id }
                // Times are read on the task's wall clock: the zone it will have.
                let zone = try await store.timeZone(location: location, team: teamID, assignee: assigneeID)
                let dueAt = try due.map { try ISODate.parse($0, field: "due", in: zone) }
                let window = try window.map { try TimeWindow.parse($0, in: zone) }
                let customerID = try await customer.asyncMap { try await store.customer(reference: $0).id }
                var new = try NewTask(
                    title: title, description: description, priority: priority,
                    assignment: try Assignment(teamID: teamID, assigneeID: assigneeID), locationID: location, dueAt: dueAt,
                    requiredSkills: requiredSkills, window: window, checklist: checklist, durationMinutes: duration,
                    customerID: customerID
                )
                new.declared = declared
                return try await store.createTask(new, force: force)
            }
            if output.json {
                try Output.json(task)
            } else {
                Output.line("Created task \(task.id) (\(task.status.rawValue)): \(task.title)")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List tasks in window order (the window's start, else the due date), then priority; '!' marks late."
        )
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Team slug or id.") var team: String?
        @Option(help: "Person id or email.") var assignee: String?
        @Option(help: "open, assigned, in-progress, completed or cancelled (repeatable).") var status: [String] = []
        @Option(help: "low, normal, high or urgent (repeatable).") var priority: [String] = []
        @Option(help: "Due before this ISO 8601 date.") var dueBefore: String?
        @Option(help: "Due after this ISO 8601 date.") var dueAfter: String?
        @Flag(help: "Only tasks past due that are not completed or cancelled.") var overdue = false
        @Option(
            help: "One day's work, in window order: tasks whose window, or else due date, falls on 2026-12-01 on the task's own wall clock."
        )
        var on: String?
        @Option(help: "Only tasks with this id, or whose title, description, site, address or assignee holds this text.")
        var search: String?
        @Option(help: "Only tasks that need this skill.") var skill: String?
        @Option(help: "Show at most this many.") var limit: Int?
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
            if let search, search.count > TaskFilter.maximumSearchLength {
                throw ValidationError("--search has at most \(TaskFilter.maximumSearchLength) characters")
            }
        }

        func run() async throws {
            let now = Date()
            var filter = TaskFilter(
                statuses: try status.map(TaskStatus.parse), priorities: try priority.map(Priority.parse),
                dueBefore: try dueBefore.map { try ISODate.parse($0, field: "due-before") },
                dueAfter: try dueAfter.map { try ISODate.parse($0, field: "due-after") },
                overdueAt: overdue ? now : nil, on: try on.map { try LocalDate(parsing: $0, field: "on") }, search: search,
                skill: skill?.lowercased(), limit: limit
            )
            let (tasks, names) = try await connection.withStore { store in
                filter.teamID = try await team.asyncMap { try await store.team(reference: $0).id }
                filter.assigneeID = try await assignee.asyncMap { try await store.person(reference: $0).id }
                let tasks = try await store.listTasks(filter)
                return (tasks, output.json ? Names() : try await Names.load(store))
            }
            if output.json { return try Output.json(tasks) }
            TaskCommand.printTable(tasks, names: names, now: now)
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one task in full.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Task id.") var id: Int64
        @OptionGroup var output: OutputOptions

        struct Details: Encodable {
            var task: FieldTask
            var team: Team?
            var assignee: Person?
            var completedBy: Person?
            var location: Location?
            /// Who answered, by person id (display names).
            var answeredBy: [String: String]?
            /// Whom its messages go to (its own customer, else its site's), and what they answered.
            var customer: Customer?
            var appointment: Appointment?
            /// What was used on it, a line per person and part (or described line).
            var materials: [MaterialLine]
            /// Time on it, work and travel per person.
            var time: [TimeEntry]
        }

        static func describe(_ location: Location) -> String {
            let parts: [String] = [location.name, location.address.singleLine, "(\(location.latitude), \(location.longitude))"]
            return parts.filter { !$0.isEmpty }.joined(separator: " ")
        }

        func run() async throws {
            let d = try await connection.withStore { store in
                let task = try await store.task(id: id)
                return Details(
                    task: task,
                    team: try await task.teamID.asyncMap { try await store.team(id: $0) },
                    assignee: try await task.assigneeID.asyncMap { try await store.person(id: $0) },
                    completedBy: try await task.completedBy.asyncMap { try await store.person(id: $0) },
                    location: try await task.locationID.asyncMap { try await store.location(id: $0) },
                    answeredBy: try await Checklist.names(task, store),
                    customer: try await store.taskCustomer(taskID: task.id),
                    appointment: try await store.appointments(taskIDs: [task.id])[task.id],
                    materials: try await store.materials(ofTask: task.id),
                    time: try await store.timeEntries(ofTask: task.id)
                )
            }
            if output.json { return try Output.json(d) }
            let t = d.task
            let zone = t.zone
            let place = d.location.map(Self.describe)
            Output.details([
                ("id", String(t.id)), ("title", t.title), ("description", t.description), ("priority", t.priority.rawValue),
                ("status", t.status.rawValue + (t.isOverdue(at: Date()) ? " (overdue)" : "")),
                ("team", d.team?.slug ?? "-"), ("assignee", d.assignee.map { "\($0.displayName) (\($0.id))" } ?? "-"),
                ("location", place ?? "-"), ("time zone", t.timeZone),
                ("plan", t.planID.map { "plan \($0), the occurrence of \(t.planDate?.description ?? "-")" } ?? "-"),
                ("due", Output.due(t.dueAt, in: zone)),
                ("window", t.window.map { $0.compact(in: zone) + (t.isPastWindow(at: Date()) ? " (past)" : "") } ?? "-"),
                ("requires", t.requiredSkills.isEmpty ? "-" : t.requiredSkills.joined(separator: ", ")),
                ("on site", t.durationMinutes.map { "\($0) min" } ?? "the team's default"),
                (
                    "expected",
                    t.expectedArrival(at: Date()).map { Output.date($0.at, in: zone) + ($0.runningLate ? " (running late)" : "") } ?? "-"
                ),
                ("pinned", t.pinned ? "yes: the day planner leaves it with its assignee" : "no"),
                ("created", Output.date(t.createdAt, in: zone)),
                ("updated", Output.date(t.updatedAt, in: zone)), ("started", Output.date(t.startedAt, in: zone)),
                ("completed", Output.date(t.completedAt, in: zone)),
                ("completed by", d.completedBy.map { "\($0.displayName) (\($0.id))" } ?? "-"),
                ("note", t.completionNote ?? "-"), ("version", String(t.version)),
                ("checklist", t.checklist.map { $0.summary(t.answers) } ?? "-"),
                (
                    "customer",
                    d.customer.map {
                        "\($0.name) (\($0.id))" + (t.customerID == nil ? ", the site's" : "")
                            + ($0.consent ? "" : ", no consent to messages")
                    } ?? "-"
                ),
                ("appointment", d.appointment.map { "sequence \($0.sequence), " + CustomerCommand.answer($0, zone: zone) } ?? "-"),
            ])
            if let checklist = t.checklist { Checklist.printAnswers(checklist, t.answers, names: d.answeredBy ?? [:], zone: zone) }
            Self.printMaterials(d.materials)
            Time.print(d.time, in: zone)
        }

        /// What was used, a line each, and the totals per currency.
        static func printMaterials(_ lines: [MaterialLine], heading: Bool = true) {
            guard !lines.isEmpty else { return }
            if heading {
                Output.line("")
                Output.line("Used:")
            }
            Output.table(
                ["PART", "NAME", "QUANTITY", "UNIT PRICE", "TOTAL", "BY"],
                lines.map { line in
                    [
                        line.partCode ?? "-", line.name, line.quantity + (line.unit.map { " \($0)" } ?? ""),
                        line.unitPrice.map { "\($0) \(line.currency ?? "")" } ?? "-",
                        line.total.map { "\($0) \(line.currency ?? "")" } ?? "-",
                        line.personName ?? String(line.personID),
                    ]
                }, maxWidth: 40)
            for (currency, total) in MaterialLine.totals(lines) {
                Output.line("Total \(currency): \(total)")
            }
            let unpriced = lines.filter { $0.total == nil }.count
            if unpriced > 0 { Output.line("\(unpriced) line\(unpriced == 1 ? "" : "s") without a price.") }
        }
    }

    struct Used: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "What was used on a task; with a part (or --line) and a quantity, correct a worker's line.",
            discussion: """
                A correction sets the line of the worker who completed the task (or its assignee; another with \
                --person) to the quantity, at the catalogue's price of today; 0 removes it. Completed tasks \
                included: the history names you, and billing gets the task's costs again (task.costed).
                """)
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Task id.") var id: Int64
        @Option(help: "A line not in the catalogue: what it was.") var line: String?
        @Option(help: "Whose line (id or email); by default the completer's, else the assignee's.") var person: String?
        @OptionGroup var output: OutputOptions
        // The part's code and the quantity (with --line, the quantity alone), as written: -1 is a quantity, not an option.
        @Argument(parsing: .allUnrecognized, help: "The part's code, then how much (with --line, how much).") var words: [String] = []

        func run() async throws {
            guard words.count <= (line == nil ? 2 : 1) else {
                throw TeamworkError(.usage, line == nil ? "task used TASK PART QUANTITY" : "with --line, give the quantity alone")
            }
            let (part, quantity): (String?, String?) = line == nil ? (words.first, words.dropFirst().first) : (nil, words.first)
            if part != nil, quantity == nil {
                throw TeamworkError(.usage, "say how much: task used \(id) \(TerminalText.inline(part!)) QUANTITY")
            }
            let lines = try await connection.withStore { store in
                guard let quantity else { return try await store.materials(ofTask: id) }
                let task = try await store.task(id: id)
                let whose = try await person.asyncMap { try await store.person(reference: $0).id } ?? task.completedBy ?? task.assigneeID
                guard let whose else { throw TeamworkError(.usage, "task \(id) has no assignee: say whose line with --person") }
                return try await store.correctMaterial(taskID: id, personID: whose, part: part, description: line, quantity: quantity)
            }
            if output.json { return try Output.json(lines) }
            if lines.isEmpty { return Output.line("Nothing used on task \(id).") }
            Show.printMaterials(lines, heading: false)
        }
    }

    struct Checklist: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A task's checklist: each item, its answer, who gave it and when; what is still to answer or failed."
        )
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Task id.") var id: Int64
        @OptionGroup var output: OutputOptions

        struct Listing: Encodable {
            var task: Int64
            var checklist: ChecklistForm?
            var answers: [AnsweredItem]
            var missing: [String]
            var failed: [String]
            var answeredBy: [String: String]
        }

        /// Display names of who answered, by person id as text.
        static func names(_ task: FieldTask, _ store: CentralStore) async throws -> [String: String]? {
            let ids = Set(task.answers.values.map(\.by))
            guard !ids.isEmpty else { return nil }
            return try await store.people(ids: Array(ids)).reduce(into: [:]) { $0[String($1.id)] = $1.displayName }
        }

        static func printAnswers(_ checklist: ChecklistForm, _ answers: [String: ChecklistAnswer], names: [String: String], zone: Zone) {
            Output.table(
                ["ITEM", "REQUIRED", "ANSWER", "BY", "AT", "LABEL"],
                checklist.items.map { item in
                    guard let answer = answers[item.key] else { return [item.key, item.required ? "yes" : "", "-", "", "", item.label] }
                    let value = answer.value + (item.unit.map { " \($0)" } ?? "") + (item.failed(by: answer.value) ? " (failed)" : "")
                    return [
                        item.key, item.required ? "yes" : "", value, names[String(answer.by)] ?? String(answer.by),
                        Output.date(answer.date, in: zone), item.label,
                    ]
                }, maxWidth: 50)
        }

        func run() async throws {
            let (task, names) = try await connection.withStore { store in
                let task = try await store.task(id: id)
                return (task, try await Self.names(task, store) ?? [:])
            }
            guard let checklist = task.checklist else {
                if output.json {
                    return try Output.json(Listing(task: task.id, checklist: nil, answers: [], missing: [], failed: [], answeredBy: [:]))
                }
                return Output.line("Task \(id) has no checklist.")
            }
            if output.json {
                return try Output.json(
                    Listing(
                        task: task.id, checklist: checklist, answers: AnsweredItem.list(task.answers),
                        missing: checklist.missing(in: task.answers), failed: checklist.failed(in: task.answers),
                        answeredBy: names))
            }
            Output.line("Task \(task.id): \(task.checklist.map { $0.summary(task.answers) } ?? "")")
            Self.printAnswers(checklist, task.answers, names: names, zone: task.zone)
        }
    }
}
