import ArgumentParser
import CentralStore
import Foundation
import TeamworkModel

/// `--expect-version`: refuse the change if someone else changed the task since.
struct VersionOption: ParsableArguments {
    @Option(help: "Refuse with a conflict unless the task is still at this version (from `task show`).")
    var expectVersion: Int?
}

extension TaskCommand {
    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Change a task's title, description, priority, location, due date, window, required skills, checklist, minutes on site, pin or customer."
        )
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Task id.") var id: Int64
        @Option var title: String?
        @Option var description: String?
        @Option(help: "low, normal, high or urgent.") var priority: String?
        @Option(help: "Location id.") var location: Int64?
        @Flag(help: "Remove the location.") var clearLocation = false
        @Option(help: "Due date: 2026-12-01 (the end of that day) or 2026-12-01T17:00 on the task's wall clock; with Z or +01:00 as given.")
        var due: String?
        @Flag(help: "Remove the due date.") var clearDue = false
        @Option(help: "Replace the required skills, comma-separated (\"\" for none).") var requires: String?
        @Option(help: "Appointment window, an ISO 8601 interval on the task's wall clock: 2026-12-01T09:00/PT3H.") var window: String?
        @Flag(help: "Remove the appointment window.") var clearWindow = false
        @Option(help: "A checklist by name (its latest version); another checklist than the task's starts its answers anew.")
        var checklist: String?
        @Flag(help: "Remove the checklist (and its answers).") var clearChecklist = false
        @Option(help: "Minutes on site (1 to 720).") var duration: Int?
        @Flag(help: "Use the team's minutes on site.") var clearDuration = false
        @Flag(inversion: .prefixedNo, help: "Pinned: the day planner leaves it with whoever has it.") var pin: Bool?
        @Option(help: "The customer (id or email) its messages go to, instead of its site's.") var customer: String?
        @Flag(help: "Its messages go to its site's customer (if any).") var siteCustomer = false
        @Option(help: ArgumentHelp(stringLiteral: DeclaredValues.help)) var set: [String] = []
        @OptionGroup var version: VersionOption
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if location != nil && clearLocation { throw ValidationError("use --location or --clear-location, not both") }
            if due != nil && clearDue { throw ValidationError("use --due or --clear-due, not both") }
            if window != nil && clearWindow { throw ValidationError("use --window or --clear-window, not both") }
            if checklist != nil && clearChecklist { throw ValidationError("use --checklist or --clear-checklist, not both") }
            if duration != nil && clearDuration { throw ValidationError("use --duration or --clear-duration, not both") }
            if customer != nil && siteCustomer { throw ValidationError("use --customer or --site-customer, not both") }
        }

        func run() async throws {
            let declared = try DeclaredValues(assignments: set)
            let task = try await connection.withStore { store in
                // Times are read on the task's wall clock: the zone it has, or will have at its new location.
                let zone: Zone
                if due != nil || window != nil {
                    let current = try await store.task(id: id)
                    zone = try await store.timeZone(
                        location: clearLocation ? nil : location ?? current.locationID,
                        team: current.teamID, assignee: current.assigneeID)
                } else {
                    zone = .utc
                }
                let dueAt: Date?? = clearDue ? .some(nil) : try due.map { .some(try ISODate.parse($0, field: "due", in: zone)) }
                var changes = try TaskChanges(
                    title: title, description: description, priority: try priority.map(Priority.parse),
                    locationID: clearLocation ? .some(nil) : location.map { .some($0) }, dueAt: dueAt,
                    requiredSkills: try requires.map { try Skills.parse($0, most: Skills.mostPerTask, field: "requires") },
                    window: clearWindow ? .some(nil) : try window.map { .some(try TimeWindow.parse($0, in: zone)) },
                    checklist: clearChecklist ? .some(nil) : checklist.map { .some($0) },
                    durationMinutes: clearDuration ? .some(nil) : duration.map { .some($0) }, pinned: pin,
                    customerID: siteCustomer
                        ? .some(nil) : try await customer.asyncMap { .some(try await store.customer(reference: $0).id) }
                )
                changes.declared = declared
                guard !changes.isEmpty else { throw TeamworkError(.usage, "nothing to change; see --help") }
                return try await store.updateTask(id: id, changes, expectedVersion: version.expectVersion)
            }
            if output.json { try Output.json(task) } else { Output.line("Updated task \(task.id) (version \(task.version))") }
        }
    }

    struct Assign: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give a task to a team (free-floating), a member of a team, or one person.",
            discussion: """
                What is not said is kept: `--assignee` alone keeps the task's team (the person must be in it), \
                `--team red` alone makes the task free-floating for red. Taking a task out of its team is said \
                with `--personal`; the output says when the team changes.
                """
        )
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Task id.") var id: Int64
        @Option(help: "Team slug or id.") var team: String?
        @Option(help: "Person id or email.") var assignee: String?
        @Flag(help: "Make it --assignee's personal task, out of any team.") var personal = false
        @Flag(help: "Give it to the first candidate of `suggest` (keeps the task's team, if any).") var suggested = false
        @Flag(help: "Assign even if the assignee lacks a required skill (the history records it).") var force = false
        @OptionGroup var version: VersionOption
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if suggested && assignee != nil { throw ValidationError("use --assignee or --suggested, not both") }
            if personal && (team != nil || assignee == nil) { throw ValidationError("--personal needs --assignee and no --team") }
        }

        func run() async throws {
            if team == nil && assignee == nil && !suggested {
                throw TeamworkError(.usage, "give --team, --assignee, both, or --suggested")
            }
            let (task, chosen, said, clashes) = try await connection.withStore { store in
                let current = try await store.task(id: id)
                let names = try await DisplayNames.load(store)
                func slug(_ team: Int64?) -> String { team.map { names.teams[$0] ?? String($0) } ?? "" }
                var teamID = try await team.asyncMap { try await store.team(reference: $0).id } ?? (personal ? nil : current.teamID)
                var assigneeID = try await assignee.asyncMap { try await store.person(reference: $0).id }
                var chosen: Candidate?
                if suggested {
                    let ranking = try await store.suggest(taskID: id, teamID: teamID, limit: 1)
                    guard let first = ranking.candidates.first else {
                        throw TeamworkError.conflict("nobody can take task \(id): \(ranking.noneBecause)")
                    }
                    assigneeID = first.person.id
                    chosen = first
                } else if team == nil, !personal, let kept = teamID, let person = assigneeID,
                    try await !store.teams(ofPerson: person).contains(where: { $0.id == kept })
                {
                    let name = names.people[person] ?? String(person)
                    throw TeamworkError.invalid(
                        "\(name) is not in \(slug(kept)), task \(id)'s team: add them (`team add-member \(slug(kept)) ...`), "
                            + "give --team for one of their teams, or --personal to make it their personal task")
                }
                if teamID == nil, assigneeID == nil { teamID = current.teamID }
                let task = try await store.assignTask(
                    id: id, to: try Assignment(teamID: teamID, assigneeID: assigneeID), expectedVersion: version.expectVersion,
                    force: force
                )
                let whom = task.assigneeID.map { "to \(names.people[$0] ?? String($0))" } ?? "to nobody yet"
                var said = "Assigned task \(task.id) \(whom)" + (task.teamID.map { " (\(slug($0)))" } ?? "")
                if current.teamID != task.teamID {
                    if let was = current.teamID, task.teamID == nil {
                        said += "; a personal task now, no longer \(slug(was))'s"
                    } else if let was = current.teamID {
                        said += "; moved from \(slug(was)) to \(slug(task.teamID))"
                    } else {
                        said += "; now \(slug(task.teamID))'s, no longer a personal task"
                    }
                }
                let clashes = try await store.doubleBookings(of: task.id).map { other in
                    "Note: \(task.assigneeID.flatMap { names.people[$0] } ?? "they") also has task \(other.id) "
                        + "“\(other.title)” \(other.window.map { $0.compact(in: other.zone, withZone: true) } ?? ""): double-booked"
                }
                return (task, chosen, said, clashes)
            }
            if output.json { return try Output.json(task) }
            if let chosen {
                Output.line("\(said): \(chosen.reasons.joined(separator: ", "))")
            } else {
                Output.line(said)
            }
            for clash in clashes { Output.line(clash) }
        }
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Cancel a task that is not completed.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Task id.") var id: Int64
        @OptionGroup var version: VersionOption

        func run() async throws {
            let task = try await connection.withStore { try await $0.cancelTask(id: id, expectedVersion: version.expectVersion) }
            Output.line("Cancelled task \(task.id)")
        }
    }

    struct Reopen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Put a completed or cancelled task back to work.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Task id.") var id: Int64
        @OptionGroup var version: VersionOption

        func run() async throws {
            let task = try await connection.withStore { try await $0.reopenTask(id: id, expectedVersion: version.expectVersion) }
            Output.line("Reopened task \(task.id) (\(task.status.rawValue))")
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a task; its history is kept.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Task id.") var id: Int64
        @OptionGroup var version: VersionOption

        func run() async throws {
            try await connection.withStore { try await $0.deleteTask(id: id, expectedVersion: version.expectVersion) }
            Output.line("Deleted task \(id)")
        }
    }

    struct History: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Every change to a task: who, when, old and new values.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Task id.") var id: Int64
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let (entries, names, zone) = try await connection.withStore { store in
                let entries = try await store.history(taskID: id)
                let zone = (try? await store.task(id: id).zone) ?? .utc
                return (entries, output.json ? Names() : try await Names.load(store), zone)
            }
            if output.json { return try Output.json(entries) }
            let words = HistoryWords(people: names.people, teams: names.teams, zone: zone)
            for entry in entries {
                Output.line("\(words.when(entry.changedAt))  \(words.what(entry)) by \(words.who(entry))")
                for line in words.lines(entry) { Output.line("    \(line)") }
            }
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create tasks from a CSV file, all or nothing.",
            discussion: """
                The header names the columns, in any order: title (required), description, priority, team (slug or id), \
                assignee (email or id), location (a site's name or id), due (ISO 8601), requires (skills, separated by commas), \
                window (an ISO 8601 interval, 2026-12-01T09:00Z/2026-12-01T12:00Z or 2026-12-01T09:00Z/PT3H), \
                checklist (a checklist's name), duration (minutes on site), customer (a customer's email or id; else the \
                site's customer), and each column set by name (as --set of task create: \(DeclaredValues.settable.map(\.name).joined(separator: ", "))). \
                Each row needs a team, an assignee, or both. Any bad row stops the import with its line and column, \
                and nothing is created.
                """
        )
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The CSV file.") var file: String
        @Flag(
            help:
                "Hold the customers' messages of these tasks (each day and team they fall on) until released with `customer release`: prepare the day first."
        )
        var holdMessages = false
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let text = try Output.readCSVFile(file)
            let (created, holds) = try await connection.withStore { store in
                let created = try await store.importTasks(csv: text, holdMessages: holdMessages)
                return (created, holdMessages ? try await store.messageHolds() : [])
            }
            if output.json { return try Output.json(created) }
            Output.line("Imported \(quantity(created.count, "task"))")
            let held = holds.filter { $0.held > 0 }
            if !held.isEmpty {
                Output.line(
                    "Customers' messages held for " + Set(held.map(\.day.description)).sorted().joined(separator: ", ")
                        + ": teamwork-manager customer holds lists them, customer release --on DAY [--team T] sends them")
            }
        }
    }
}
