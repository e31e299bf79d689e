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
        static let configuration = CommandConfiguration(abstract: "Change a task's title, description, priority, location or due date.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Task id.") var id: Int64
        @Option var title: String?
        @Option var description: String?
        @Option(help: "low, normal, high or urgent.") var priority: String?
        @Option(help: "Location id.") var location: Int64?
        @Flag(help: "Remove the location.") var clearLocation = false
        @Option(help: "Due date, ISO 8601.") var due: String?
        @Flag(help: "Remove the due date.") var clearDue = false
        @OptionGroup var version: VersionOption
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if location != nil && clearLocation { throw ValidationError("use --location or --clear-location, not both") }
            if due != nil && clearDue { throw ValidationError("use --due or --clear-due, not both") }
        }

        func run() async throws {
            let dueAt: Date?? = clearDue ? .some(nil) : try due.map { .some(try ISODate.parse($0, field: "due")) }
            let changes = try TaskChanges(
                title: title, description: description, priority: try priority.map(Priority.parse),
                locationID: clearLocation ? .some(nil) : location.map { .some($0) }, dueAt: dueAt
            )
            guard !changes.isEmpty else { throw TeamworkError(.usage, "nothing to change; see --help") }
            let task = try await connection.withStore {
                try await $0.updateTask(id: id, changes, expectedVersion: version.expectVersion)
            }
            if output.json { try Output.json(task) } else { Output.line("Updated task \(task.id) (version \(task.version))") }
        }
    }

    struct Assign: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give a task to a team (free-floating), a member of a team, or one person.",
            discussion: "Whatever is not given is cleared: `--team red` alone makes the task free-floating for red."
        )
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Task id.") var id: Int64
        @Option(help: "Team slug or id.") var team: String?
        @Option(help: "Person id or email.") var assignee: String?
        @OptionGroup var version: VersionOption
        @OptionGroup var output: OutputOptions

        func run() async throws {
            if team == nil && assignee == nil { throw TeamworkError(.usage, "give --team, --assignee, or both") }
            let task = try await connection.withStore { store in
                let teamID = try await team.asyncMap { try await store.team(reference: $0).id }
                let assigneeID = try await assignee.asyncMap { try await store.person(reference: $0).id }
                return try await store.assignTask(
                    id: id, to: try Assignment(teamID: teamID, assigneeID: assigneeID), expectedVersion: version.expectVersion
                )
            }
            if output.json { try Output.json(task) } else { Output.line("Assigned task \(task.id) (\(task.status.rawValue))") }
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
            let (entries, names) = try await connection.withStore { store in
                (try await store.history(taskID: id), output.json ? Names() : try await Names.load(store))
            }
            if output.json { return try Output.json(entries) }
            func show(_ value: String?) -> String {
                guard let value else { return "-" }
                return value.isEmpty ? "\"\"" : value
            }
            for entry in entries {
                let who = entry.actorID.map { id in names.people[id].map { "\($0) (\(id))" } ?? "person \(id)" }
                Output.line("\(Output.date(entry.changedAt))  \(entry.action)  by \(who ?? "database user \(entry.databaseUser)")")
                for key in entry.changes.keys.sorted() {
                    let change = entry.changes[key]!
                    Output.line("    \(key): \(show(change.old)) -> \(show(change.new))")
                }
            }
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create tasks from a CSV file, all or nothing.",
            discussion: """
                The header names the columns, in any order: title (required), description, priority, team (slug or id),
                assignee (email or id), location (id), due (ISO 8601). Each row needs a team, an assignee, or both.
                Any bad row stops the import with its line and column, and nothing is created.
                """
        )
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "The CSV file.") var file: String
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let text: String
            do {
                text = try String(contentsOfFile: file, encoding: .utf8)
            } catch {
                throw TeamworkError(.unreadableFile, "cannot read \(file) as UTF-8 text")
            }
            let created = try await connection.withStore { try await $0.importTasks(csv: text) }
            if output.json { try Output.json(created) } else { Output.line("Imported \(created.count) task(s)") }
        }
    }
}
