import ArgumentParser
import CentralStore
import Foundation
import TeamworkModel

/// `teamwork-manager conflicts`: worker changes the master could not take as they were.
struct ConflictsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conflicts",
        abstract: "Worker changes the master could not take as they were, and why.",
        discussion: """
            Rules (docs/listener.md): a change for a cancelled or deleted task is not applied; the first \
            completion of a task to reach the master wins; a completion of a task moved to another team or \
            reassigned meanwhile is applied but listed; a claim of a task assigned meanwhile is not applied; \
            changes the sync endpoint refused are listed with its reason.
            """,
        subcommands: [List.self, Accept.self, Dismiss.self, Resolve.self],
        defaultSubcommand: List.self
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List open conflicts, oldest first.")
        @OptionGroup var connection: ConnectionOptions
        @Flag(help: "Include resolved conflicts.") var all = false
        @Option(help: "Only this task's conflicts.") var task: Int64?
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let (conflicts, zones) = try await connection.withStore { store in
                let conflicts = try await store.conflicts(includeResolved: all, taskID: task)
                // Each on its task's clock, as task show has it.
                let zones = try await store.tasks(ids: Array(Set(conflicts.compactMap(\.taskID)))).mapValues(\.zone)
                return (conflicts, zones)
            }
            if output.json { return try Output.json(conflicts) }
            if conflicts.isEmpty {
                Output.line(all ? "No conflicts." : "No open conflicts.")
                return
            }
            Output.table(
                ["ID", "RULE", "APPLIED", "TASK", "WORKER", "CHANGE", "WHEN", "DETAIL"],
                conflicts.map { conflict in
                    [
                        String(conflict.id), conflict.rule + (conflict.resolvedAt == nil ? "" : " (resolved)"),
                        conflict.applied ? "yes" : "no",
                        conflict.taskID.map { "\($0) \(conflict.taskTitle ?? "(deleted)")" } ?? "-",
                        conflict.personName ?? String(conflict.personID), conflict.operation + (conflict.note.map { ": \($0)" } ?? ""),
                        Output.date(conflict.madeAt, in: conflict.taskID.flatMap { zones[$0] } ?? .utc), conflict.detail ?? "",
                    ]
                }, maxWidth: 60)
        }
    }

    struct Accept: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Accept a completion, a use or a time entry the master set aside as the worker's work.",
            discussion: """
                A completion: the task becomes completed by that worker (and theirs), at the time and with the note \
                they gave; their other open start and completion conflicts of the task are decided with it. Refused \
                when the task was completed or cancelled since (reopen it first). A use or a time entry (a task that \
                moved, a line too late): recorded as the worker gave it, as your correction (task used, task time), \
                completed tasks included. The task's history names you.
                """)
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Conflict id (from `conflicts`).") var id: Int64
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let (conflict, task) = try await connection.withStore { try await $0.acceptConflict(id: id) }
            if output.json { return try Output.json(task) }
            Output.line(conflict.accepted(taskID: task.id))
        }
    }

    struct Dismiss: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set aside what the worker did, saying why: the worker's device shows the reason beside the refusal.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Conflict id (from `conflicts`).") var id: Int64
        @Option(help: "Why (1 to 500 characters); the worker reads it.") var reason: String

        func run() async throws {
            let conflict = try await connection.withStore { try await $0.dismissConflict(id: id, reason: reason) }
            Output.line(
                "Dismissed conflict \(conflict.id) (\(conflict.rule), task \(conflict.taskID.map(String.init) ?? "-")): "
                    + "\(conflict.personName ?? "the worker") reads why on their next sync")
        }
    }

    struct Resolve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Mark a conflict resolved, with a note of what was done.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Conflict id (from `conflicts`).") var id: Int64
        @Option(help: "What was decided.") var note: String = ""

        func validate() throws {
            if note.count > 2_000 { throw ValidationError("--note has at most 2000 characters") }
        }

        func run() async throws {
            let conflict = try await connection.withStore { try await $0.resolveConflict(id: id, resolution: note) }
            Output.line("Resolved conflict \(conflict.id) (\(conflict.rule), task \(conflict.taskID.map(String.init) ?? "-"))")
        }
    }
}
