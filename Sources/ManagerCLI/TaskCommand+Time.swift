import ArgumentParser
import CentralStore
import Foundation
import TeamworkModel

extension TaskCommand {
    struct Time: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Time on a task, work and travel per person; with times, correct a person's entry.",
            discussion: """
                A correction sets the entry of the worker who completed the task (or its assignee; another with \
                --person): task time 12 --start 08:00 --end 10:30, --minutes 90 (ending now, or at --end), \
                --travel for travel, --clear to remove it. Times are on the task's clock. Completed tasks \
                included: the history names you, and billing gets the task's costs again (task.costed).
                """)
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Task id.") var id: Int64
        @Option(help: "Whose entry (id or email); by default the completer's, else the assignee's.") var person: String?
        @Flag(help: "Travel to the task, not work on it.") var travel = false
        @Option(help: "When it began: 08:00 (today on the task's clock) or 2026-11-30T08:00.") var start: String?
        @Option(help: "When it ended (default: now, with --minutes).") var end: String?
        @Option(help: "How long, in minutes (1 to 1440).") var minutes: Int?
        @Flag(help: "Remove the entry.") var clear = false
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let correcting = clear || start != nil || end != nil || minutes != nil
            let (entries, zone) = try await connection.withStore { store in
                let task = try await store.task(id: id)
                guard correcting else { return (try await store.timeEntries(ofTask: id), task.zone) }
                let whose = try await person.asyncMap { try await store.person(reference: $0).id } ?? task.completedBy ?? task.assigneeID
                guard let whose else { throw TeamworkError(.usage, "task \(id) has no assignee: say whose entry with --person") }
                let span = try TimeOnJob.interval(start: start, end: end, minutes: minutes, clear: clear, in: task.zone, now: Date())
                return (
                    try await store.correctTime(
                        taskID: id, personID: whose, kind: travel ? .travel : .work, start: span.start, end: span.end), task.zone
                )
            }
            if output.json { return try Output.json(entries) }
            if entries.isEmpty { return Output.line("No time on task \(id).") }
            Self.print(entries, in: zone, heading: false)
        }

        /// The entries, a line each, and the task's labour: work and travel.
        static func print(_ entries: [TimeEntry], in zone: Zone, heading: Bool = true) {
            guard !entries.isEmpty else { return }
            if heading {
                Output.line("")
                Output.line("Time:")
            }
            Output.table(
                ["KIND", "BY", "FROM", "TO", "HOURS", "FROM WHERE"],
                entries.map { entry in
                    [
                        entry.kind.rawValue, entry.personName ?? String(entry.personID), Output.date(entry.startedAt, in: zone),
                        entry.endedAt.map { Output.date($0, in: zone) } ?? "running",
                        entry.minutes.map(TimeOnJob.hours) ?? "-", entry.origin,
                    ]
                })
            let totals = TimeEntry.totals(entries)
            Output.line("Labour: \(TimeOnJob.hours(totals.work)) work, \(TimeOnJob.hours(totals.travel)) travel.")
        }
    }
}
