import ArgumentParser
import CommandLineSupport
import Foundation
import SyncProtocol
import TeamworkModel
import WorkerClient

// What was used on a job (docs/dispatch.md, "Parts"): recorded, listed, and the catalogue the device holds.

struct Used: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Record what you used on one of your tasks (works offline); with the task alone, list it.",
        discussion: """
            A part of the catalogue by its code (used 12 CBL-3 12.5), or a line of your own with --line \
            (used 12 --line "Cable ties" 20). Recording a part again sets its quantity: a correction, \
            until the task is completed; 0 removes the line. Quantities are in the part's unit, 0 to 100000, \
            at most 3 decimals.
            """
    )
    @Argument(help: "Task id.") var id: Int64
    @Option(help: "A line not in the catalogue: what it was (one line, at most 200 bytes).") var line: String?
    @OptionGroup var output: JSONOption
    // The part's code and the quantity (with --line, the quantity alone), as written: `used 12 CBL-3 -1`
    // reads -1 as a quantity (refused as one), not as an option.
    @Argument(parsing: .allUnrecognized, help: "The part's code, then how much in its unit (with --line, how much).")
    var words: [String] = []

    func run() async throws {
        let most = line == nil ? 2 : 1
        guard words.count <= most else {
            throw TeamworkError(
                .usage, line == nil ? "used TASK PART QUANTITY" : "with --line, give the quantity alone: used \(id) --line TEXT QUANTITY")
        }
        let (item, value): (String?, String?) = line == nil ? (words.first, words.dropFirst().first) : (nil, words.first)
        guard let value else {
            if item != nil { throw TeamworkError(.usage, "say how much: used \(id) \(TerminalText.inline(item!)) QUANTITY") }
            return try list()
        }
        // A quantity or a code that can never be taken is bad input (65), before the task's state is looked at.
        let change = WorkerChange(id: "device-check", operation: .use, taskID: id, note: line, madeAt: Date(), item: item, value: value)
        if let problem = change.materialProblem() { throw TeamworkError.invalid(problem) }
        if let item { try Self.checkCatalogue(item) }
        try TaskChange.queue(.use, id: id, note: line, item: item, value: value)
    }

    /// The device's copy of the catalogue (the common data) refuses a part it does not hold, before
    /// it is queued; with no copy yet, the master decides. Whether a retired part may go on a line is
    /// the master's to say: it knows every line of the task, this device only its own.
    static func checkCatalogue(_ code: String) throws {
        let catalogue = try WorkerHome().store().parts(retired: true)
        guard !catalogue.isEmpty, !catalogue.contains(where: { $0.code.lowercased() == code.lowercased() }) else { return }
        throw TeamworkError.conflict(
            "no part \(TerminalText.inline(code)) in this device's copy of the catalogue: sync to get the latest "
                + "(teamwork-worker parts lists it), or record it with --line")
    }

    func list() throws {
        let home = try WorkerHome()
        let store = try home.store()
        let me = try home.personID(store)
        guard try store.task(id: id) != nil else { throw TeamworkError.notFound("no task \(id) on this device") }
        let lines = try store.materials(taskID: id, person: me)
        if output.json { return try output.print(lines) }
        if lines.isEmpty { return TeamworkWorker.say("Nothing recorded as used on task \(id) from this device.") }
        TextOutput.table(
            ["PART", "QUANTITY", "SENT"],
            lines.map {
                [TerminalText.inline($0.part ?? "“\($0.description ?? "")”"), $0.quantity, $0.state == "pending" ? "not yet" : "yes"]
            })
    }
}

struct Parts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The parts catalogue, as this device holds it (it comes with the common data at each sync).")
    @Flag(help: "Retired parts too.") var all = false
    @OptionGroup var output: JSONOption

    func run() async throws {
        let parts = try WorkerHome().store().parts(retired: all)
        if output.json { return try output.print(parts) }
        if parts.isEmpty { return TeamworkWorker.say("No parts on this device yet: sync, or ask your dispatcher to add some.") }
        TextOutput.table(
            ["CODE", "NAME", "UNIT", "PRICE"],
            parts.map { part in
                [
                    part.code + (part.retired ? " (retired)" : ""), TerminalText.inline(part.name), part.unit,
                    part.unitPrice.map { "\($0) \(part.currency ?? "")" } ?? "-",
                ]
            })
    }
}
