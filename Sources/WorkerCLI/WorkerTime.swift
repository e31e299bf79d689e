import ArgumentParser
import CommandLineSupport
import Foundation
import SyncProtocol
import TeamworkModel
import WorkerClient

// Time on the job (docs/dispatch.md, "Time on the job"): a worker's own entry of work or travel on a task.

struct TimeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "time",
        abstract: "Record your time on a task, work or travel (works offline); with the task alone, list it.",
        discussion: """
            Your start and completion already keep your work's time, and completing a task starts your travel \
            to your next one of the day; this sets it yourself: time 12 --start 08:00 --end 10:30, \
            time 12 --minutes 90 (ending now, or at --end), time 12 --travel --minutes 25. Times are on the \
            task's clock (today, or a date like 2026-11-30T08:00), at most 24 hours long, beginning at most \
            31 days ago, never overlapping your other entries. Recording again replaces your entry; --clear \
            removes it. You record time on a task you hold or held, before or after it is completed.
            """
    )
    @Argument(help: "Task id.") var id: Int64
    @Flag(help: "Travel to the task, not work on it.") var travel = false
    @Option(help: "When it began: 08:00 (today on the task's clock) or 2026-11-30T08:00.") var start: String?
    @Option(help: "When it ended (default: now, with --minutes).") var end: String?
    @Option(help: "How long, in minutes (1 to 1440).") var minutes: Int?
    @Flag(help: "Remove your entry of this kind.") var clear = false
    @OptionGroup var output: JSONOption

    var kind: TimeOnJob.Kind { travel ? .travel : .work }

    func run() async throws {
        guard clear || start != nil || end != nil || minutes != nil else { return try list() }
        let store = try WorkerHome().store()
        guard let task = try store.task(id: id) else { throw TeamworkError.notFound("no task \(id) on this device") }
        let now = Date()
        let interval = try TimeOnJob.interval(start: start, end: end, minutes: minutes, clear: clear, in: task.zone, now: now)
        let value = TimeOnJob.value(start: interval.start, end: interval.end)
        // An entry that can never be taken is bad input (65), before the task's state is looked at.
        if let problem = TimeOnJob.problem(kind: kind.rawValue, value: value, receivedAt: now) { throw TeamworkError.invalid(problem) }
        // A person's entries never overlap: this device checks what it recorded, the master everything.
        let span = TimeOnJob.Span(taskID: id, kind: kind.rawValue, start: interval.start, end: interval.end)
        if let clash = TimeOnJob.clash(span, among: try store.timeSpans(person: try WorkerHome().personID(store))) {
            throw TeamworkError.conflict("this entry cannot be recorded: \(clash)")
        }
        try TaskChange.queue(.time, id: id, item: kind.rawValue, value: value)
    }

    func list() throws {
        let home = try WorkerHome()
        let store = try home.store()
        let me = try home.personID(store)
        guard let task = try store.task(id: id) else { throw TeamworkError.notFound("no task \(id) on this device") }
        let entries = try store.timeEntries(taskID: id, person: me)
        if output.json { return try output.print(entries) }
        if entries.isEmpty {
            return TeamworkWorker.say(
                "No time recorded on task \(id) from this device (your start and completion keep your work's time on the server).")
        }
        TextOutput.table(
            ["KIND", "FROM", "TO", "HOURS", "SENT"],
            entries.map { entry in
                [
                    entry.kind, task.zone.format(entry.start), task.zone.format(entry.end),
                    TimeOnJob.hours(TimeOnJob.minutes(entry.start, entry.end)), entry.state == "pending" ? "not yet" : "yes",
                ]
            })
    }
}
