import ArgumentParser
import CommandLineSupport
import Foundation
import SyncProtocol
import TeamworkModel
import WorkerClient

struct Teams: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The teams (and personal list) on this device.")
    @OptionGroup var output: JSONOption

    func run() async throws {
        let replicas = try WorkerHome().store().replicas().filter { $0.kind != "common" }
        if output.json { return try output.print(replicas.map { ["name": $0.name, "title": $0.title, "kind": $0.kind] }) }
        TextOutput.table(["TEAM", "NAME"], replicas.map { [$0.slug ?? $0.name, $0.title] })
    }
}

struct Tasks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Your tasks, in the planned order (ETA), else by window or due date, then priority; '!' marks overdue or past its window.",
        discussion: "Yours by default; --all for everything on the device, --team for one team's; --today for today's work."
    )
    @Flag(help: "Every task on the device, not just yours.") var all = false
    @Flag(
        help:
            "Only today's work: tasks whose window, or else due date, is today on the task's own clock (its site's or team's zone, whatever this device's), in window order."
    )
    var today = false
    @Option(help: "Only one day's work, like --today: 2026-12-01.") var on: String?
    @Option(help: "One team, by slug.") var team: String?
    @Option(help: "open, assigned, in-progress, completed or cancelled (repeatable).") var status: [String] = []
    @OptionGroup var output: JSONOption

    func run() async throws {
        let home = try WorkerHome()
        let store = try home.store()
        let statuses = try status.map { try TaskStatus.parse($0).rawValue }
        var replica: String?
        if let team {
            guard let found = try store.replicas().first(where: { $0.slug == team }) else {
                throw TeamworkError.notFound("no team '\(team)' on this device")
            }
            replica = found.name
        }
        let me = try home.personID(store)
        let now = Date()
        if today && on != nil { throw TeamworkError(.usage, "use --today or --on, not both") }
        var tasks = try store.tasks(
            assignee: all || team != nil ? nil : me, replica: replica, statuses: statuses,
            on: try on.map { try LocalDate(parsing: $0, field: "on") })
        // Today is each task's own today: its zone's date now.
        if today { tasks = tasks.filter { TimeWindow.falls(on: $0.zone.date(of: now), due: $0.dueAt, window: $0.window, in: $0.zone) } }
        let day: LocalDate? = today ? Zone.utc.date(of: now) : try on.map { try LocalDate(parsing: $0, field: "on") }
        if output.json { return try output.print(tasks) }
        if tasks.isEmpty { return TeamworkWorker.say(day == nil ? "No tasks." : "No tasks that day.") }
        let zones = Set(tasks.map(\.timeZone))
        // The day planner's expected start, when a plan gave one: the order to go in.
        let planned = tasks.contains { $0.expectedArrival(at: now) != nil }
        TextOutput.table(
            ["ID", "WHEN"] + (planned ? ["ETA"] : []) + ["PRIORITY", "STATUS", "TITLE", "WHERE"],
            tasks.map { task in
                let zone = task.zone
                let due = task.dueAt.map { zone.date(of: $0).description } ?? "-"
                let when = (task.window.map { $0.compact(in: zone, withZone: zones.count > 1) } ?? due) + (task.isLate(at: now) ? " !" : "")
                let eta = task.expectedArrival(at: now).map { zone.time(of: $0.at).short + ($0.runningLate ? " late" : "") } ?? "-"
                return [String(task.id), when] + (planned ? [eta] : []) + [
                    task.priority.rawValue, task.status.rawValue, task.title, task.address ?? "-",
                ]
            }, maxWidth: 60)
    }
}

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "One task in full, with its location.")
    @Argument(help: "Task id.") var id: Int64
    @OptionGroup var output: JSONOption

    func run() async throws {
        let store = try WorkerHome().store()
        guard let task = try store.task(id: id) else { throw TeamworkError.notFound("no task \(id) on this device") }
        if output.json { return try output.print(task) }
        let assignee = try task.assigneeID.map { id in try store.personName(id).map { "\($0) (\(id))" } ?? String(id) }
        let declared: [(String, String)] = task.shownColumns.map { ($0.label, $0.value) }
        let lines: [(String, String)] =
            [
                ("id", String(task.id)), ("title", task.title), ("description", task.description), ("priority", task.priority.rawValue),
                ("status", task.status.rawValue + (task.isOverdue(at: Date()) ? " (overdue)" : "")), ("assignee", assignee ?? "-"),
                ("due", task.dueAt.map { task.zone.format($0) } ?? "-"),
                ("window", task.window.map { $0.compact(in: task.zone) + (task.isPastWindow(at: Date()) ? " (past)" : "") } ?? "-"),
                (
                    "expected",
                    task.expectedArrival(at: Date()).map { task.zone.format($0.at) + ($0.runningLate ? " (running late)" : "") } ?? "-"
                ),
                ("time zone", task.timeZone),
                ("plan", task.planID.map { "plan \($0), the occurrence of \(task.planDate?.description ?? "-")" } ?? "-"),
                ("requires", task.requiredSkills.isEmpty ? "-" : task.requiredSkills.joined(separator: ", ")),
                ("checklist", task.checklist.map { $0.summary(task.answers) } ?? "-"),
                ("location", task.location ?? "-"),
                ("note", task.completionNote ?? "-"),
            ] + declared
        TextOutput.details(
            lines.map { key, value in
                // The title is one line wherever it shows; a description or a note keeps its lines.
                (key, key == "description" || key == "note" ? value : TerminalText.inline(value))
            })
    }
}

/// Start, complete, claim and reopen: checked on the device with the shared rules, queued, shown at once.
struct TaskChange {
    /// A note's limit, checked before anything is queued.
    static func validate(note: String) throws {
        if note.utf8.count > WorkerChange.maximumNoteBytes {
            throw ValidationError("a note has at most \(WorkerChange.maximumNoteBytes) bytes (UTF-8)")
        }
    }

    static func queue(
        _ operation: WorkerChange.Operation, id: Int64, note: String? = nil, item given: String? = nil,
        value: String? = nil, file: String? = nil, signer: String? = nil
    ) throws {
        let home = try WorkerHome()
        let store = try home.store()
        let me = try home.personID(store)
        guard let task = try store.task(id: id) else { throw TeamworkError.notFound("no task \(id) on this device") }
        // The same rules the sync endpoint applies, on the device's copy of the task and of the worker's skills.
        // A file is kept on the device first (checked, named by its SHA-256), then the change that names it.
        let attachment = try file.map { try store.keep(file: $0, signer: signer) }
        defer { attachment?.discardStaged() }
        // A photo without --item answers the checklist's one photo item still unanswered, if it has exactly one.
        var item = given
        var hint: String?
        if operation == .attach, item == nil, let attachment, let checklist = task.checklist {
            let kind: ChecklistItem.Kind = attachment.signer == nil ? .photo : .signature
            let answered = task.answers
            let open = checklist.items.filter { $0.kind == kind && answered[$0.key] == nil }.map(\.key)
            if open.count == 1, attachment.mediaType.hasPrefix("image/") {
                item = open[0]
            } else if !open.isEmpty {
                hint = "This task's checklist has \(kind.rawValue) items \(open.joined(separator: ", ")): add --item to answer one."
            }
        }
        let change = WorkerChange(
            id: "device-check", operation: operation, taskID: id, note: note, madeAt: Date(),
            item: item, value: value, blob: attachment?.blob, size: attachment?.size,
            mediaType: attachment?.mediaType, signer: attachment?.signer)
        // A value the item cannot take is bad input (65), not a conflict with the task's state (68).
        if operation == .answer, let item, let value, let problem = task.checklist?.item(item)?.problem(with: value) {
            throw TeamworkError.invalid("\(item): \(problem)")
        }
        let worker = FieldWorker(id: me, skills: try store.skills(of: me, in: task.replica))
        if let reason = change.rejection(by: worker, task: task.facts, inTeam: task.replica.hasPrefix("team-"), receivedAt: Date()) {
            throw TeamworkError.conflict(reason + Self.howToAnswer(task, operation: operation))
        }
        _ = try store.enqueue(operation, taskID: id, in: task.replica, by: me, note: note, item: item, value: value, attachment: attachment)
        if let attachment {
            let what = attachment.signer.map { "Signature of \(TerminalText.inline($0))" } ?? "File"
            TeamworkWorker.say(
                "\(what) for task \(id)\(item.map { " (\($0))" } ?? ""): \(attachment.mediaType), \(attachment.size) bytes, "
                    + "sha256 \(attachment.blob.prefix(12))…: kept on this device; it is uploaded at the next sync.")
        } else if operation == .use, let value {
            let what = TerminalText.inline(item ?? "“\(note ?? "")”")
            let done = value.contains { $0 != "0" && $0 != "." } ? "used: \(value)" : "removed"
            TeamworkWorker.say("Task \(id), \(what) \(done): queued; it goes to the server at the next sync.")
        } else if operation == .time, let item, let value, let span = TimeOnJob.interval(value) {
            let what =
                span.end > span.start
                ? "\(task.zone.format(span.start)) to \(task.zone.format(span.end)) (\(TimeOnJob.hours(TimeOnJob.minutes(span.start, span.end))))"
                : "removed"
            TeamworkWorker.say("Task \(id), \(item) \(what): queued; it goes to the server at the next sync.")
        } else if let item, let value {
            TeamworkWorker.say("Task \(id), \(item): \(TerminalText.inline(value)): queued; it goes to the server at the next sync.")
        } else {
            TeamworkWorker.say("\(operation.rawValue.capitalized) task \(id): queued; it goes to the server at the next sync.")
        }
        if let hint { TeamworkWorker.say(hint) }
    }

    /// For a completion refused for missing answers: the command that answers each.
    static func howToAnswer(_ task: LocalTask, operation: WorkerChange.Operation) -> String {
        guard operation == .complete, let checklist = task.checklist else { return "" }
        let missing = checklist.missing(in: task.answers)
        guard !missing.isEmpty else { return "" }
        let ways = missing.compactMap { key -> String? in
            guard let item = checklist.item(key) else { return nil }
            switch item.kind {
            case .photo: return "teamwork-worker attach \(task.id) FILE --item \(key)"
            case .signature: return "teamwork-worker sign \(task.id) FILE --signer NAME --item \(key)"
            default: return "teamwork-worker check \(task.id) \(key)\(item.kind == .check ? "" : " VALUE")"
            }
        }
        return ways.isEmpty ? "" : " (answer with: " + ways.joined(separator: "; ") + ")"
    }
}

struct Start: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Start one of your tasks (works offline).")
    @Argument(help: "Task id.") var id: Int64
    func run() async throws { try TaskChange.queue(.start, id: id) }
}

struct Complete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Complete one of your tasks with a note (works offline).")
    @Argument(help: "Task id.") var id: Int64
    @Option(help: "What was done (optional).") var note: String = ""
    func validate() throws { try TaskChange.validate(note: note) }
    func run() async throws { try TaskChange.queue(.complete, id: id, note: note) }
}

struct Claim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Take a free-floating task of your team (works offline).")
    @Argument(help: "Task id.") var id: Int64
    func run() async throws { try TaskChange.queue(.claim, id: id) }
}

struct Reopen: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Take back your own completion of a task, saying why (works offline).",
        discussion: "The task goes back to in progress (or assigned, if it was never started); the history keeps both."
    )
    @Argument(help: "Task id.") var id: Int64
    @Option(help: "Why it is not done after all.") var note: String
    func validate() throws { try TaskChange.validate(note: note) }
    func run() async throws { try TaskChange.queue(.reopen, id: id, note: note) }
}

struct Undo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Take back a change not sent yet: the newest, or the one named (see `status --json`).",
        discussion: "Only a change still queued on this device can be taken back; a sent one is the server's (use reopen)."
    )
    @Argument(help: "A queued change's id; the newest when left out.") var change: String?

    func run() async throws {
        let undone = try WorkerHome().store().undo(change)
        TeamworkWorker.say("Took back \(undone.operation)\(undone.taskID.map { " of task \($0)" } ?? ""); it will not be sent.")
    }
}

struct Checkin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Report where you are (works offline).")
    @Option(name: .customLong("lat"), parsing: .unconditional, help: "Latitude, -90 to 90.") var latitude: Double
    @Option(name: .customLong("lon"), parsing: .unconditional, help: "Longitude, -180 to 180.") var longitude: Double

    func run() async throws {
        _ = try Validate.latitude(latitude)
        _ = try Validate.longitude(longitude)
        let home = try WorkerHome()
        let store = try home.store()
        let me = try home.personID(store)
        // Before any replica of the worker is generated, the personal one holds it; sync moves it to one that exists.
        let replica = try store.checkinReplica() ?? "person-\(me)"
        _ = try store.enqueue(.checkin, taskID: nil, in: replica, by: me, latitude: latitude, longitude: longitude)
        TeamworkWorker.say("Check-in queued; it goes to the server at the next sync.")
    }
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Last sync, queued changes and rejected ones (the last two weeks'; --all for every one kept).")
    @Flag(help: "Every rejected change kept on the device, not just the last two weeks'.") var all = false
    @OptionGroup var output: JSONOption

    /// How far back rejections are listed unless --all.
    static let recent: TimeInterval = 14 * 24 * 3600

    struct Summary: Encodable {
        var lastSync: String?
        var queued: [QueuedChange]
        /// Sent and accepted, not yet confirmed by the master: sent again at each sync until it is.
        var unconfirmed: Int
        /// Files of queued attachments still to upload, and their bytes.
        var filesWaiting: Int
        var bytesWaiting: Int64
        /// Refused by the server when sent, or taken by it and refused by the master later.
        var rejected: [QueuedChange]
    }

    func run() async throws {
        let store = try WorkerHome().store()
        let outbox = try store.outbox()
        let files = try store.filesWaiting()
        let summary = Summary(
            lastSync: try store.setting("last_sync"), queued: outbox.filter { $0.state == "pending" },
            unconfirmed: try store.unconfirmedCount(), filesWaiting: files.count, bytesWaiting: files.bytes,
            rejected: outbox.filter { $0.state == "rejected" || $0.state == "refused" })
        if output.json { return try output.print(summary) }
        // Instants on this device's own clock, as the worker reads it.
        let here = Zone.reading(TimeZone.current.identifier)
        let lastSync = summary.lastSync.flatMap { try? ISODate.parse($0, field: "last_sync") }.map { here.format($0) } ?? summary.lastSync
        TeamworkWorker.say("Last sync: \(lastSync ?? "never")")
        TeamworkWorker.say("Queued: \(quantity(summary.queued.count, "change")) waiting for the next sync")
        if summary.unconfirmed > 0 {
            TeamworkWorker.say(
                "Sent, not yet confirmed by the master: \(quantity(summary.unconfirmed, "change")) (sent again at each sync until it is)")
        }
        if summary.filesWaiting > 0 {
            TeamworkWorker.say("Files to upload: \(summary.filesWaiting) (\(summary.bytesWaiting) bytes)")
        }
        for change in summary.queued {
            guard let why = change.lastError else { continue }
            TeamworkWorker.say("Waiting: \(change.operation) task \(change.taskID.map(String.init) ?? "-"): \(why)")
        }
        let me = try? WorkerHome().personID(store)
        let since = Date().addingTimeInterval(-Self.recent)
        let shown = all ? summary.rejected : summary.rejected.filter { $0.madeAt >= since }
        if shown.count < summary.rejected.count {
            TeamworkWorker.say("\(quantity(summary.rejected.count - shown.count, "older rejected change")) not shown (status --all)")
        }
        for change in shown {
            TeamworkWorker.say(
                "\(change.state == "refused" ? "Refused" : "Rejected") \(here.format(change.madeAt, withZone: false)): \(change.operation) task \(change.taskID.map(String.init) ?? "-"): \(change.reason ?? "no reason given")"
                    + (try Self.outcome(of: change, store: store, me: me))
            )
        }
    }

    /// What became of the task since, as the device's copy has it: the dispatcher's decision shows there.
    static func outcome(of change: QueuedChange, store: LocalStore, me: Int64?) throws -> String {
        guard let id = change.taskID, let task = try store.task(id: id) else { return "" }
        if task.status == .completed, let by = task.completedBy, by == me {
            return change.operation == "complete" ? "; your completion stands (the dispatcher accepted it)" : "; now completed by you"
        }
        let holder = try task.assigneeID.map { $0 == me ? "yours" : "\(try store.personName($0) ?? "person \($0)")'s" }
        return "; the task is now \(task.status.words)\(holder.map { ", \($0)" } ?? "")"
    }
}

struct ChecklistCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checklist",
        abstract: "A task's checklist: each item, whether it is required, and its answer (yours queued ones included).",
        discussion:
            "Answer an item with: teamwork-worker check TASK ITEM [VALUE]. A task with required items unanswered cannot be completed."
    )
    @Argument(help: "Task id.") var id: Int64
    @OptionGroup var output: JSONOption

    func run() async throws {
        let store = try WorkerHome().store()
        guard let task = try store.task(id: id) else { throw TeamworkError.notFound("no task \(id) on this device") }
        guard let checklist = task.checklist else {
            if output.json { return try output.print([String: String]()) }
            return TeamworkWorker.say("Task \(id) has no checklist.")
        }
        let answers = task.answers
        if output.json {
            struct Listing: Encodable {
                var checklist: ChecklistForm
                var answers: [AnsweredItem]
                var missing: [String]
            }
            return try output.print(
                Listing(checklist: checklist, answers: AnsweredItem.list(task.answers), missing: checklist.missing(in: answers)))
        }
        TeamworkWorker.say(
            "\(TerminalText.inline(checklist.name)) (version \(checklist.version)) for task \(id): \(TerminalText.inline(task.title))")
        TextOutput.table(
            ["ITEM", "KIND", "REQUIRED", "ANSWER", "LABEL"],
            checklist.items.map { item in
                let answer = answers[item.key].map { $0.value + (item.unit.map { " \($0)" } ?? "") } ?? "-"
                return [item.key, item.describedKind, item.required ? "yes" : "", answer, item.label]
            }, maxWidth: 50)
        let missing = checklist.missing(in: answers)
        if !missing.isEmpty { TeamworkWorker.say("Still to answer before completing: \(missing.joined(separator: ", ")).") }
    }
}

struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Answer one item of a task's checklist (works offline); the latest answer counts.",
        discussion: """
            A check item takes yes (the default) or no; a number item a decimal number in its range; a choice \
            item one of its options; a text item any text. Examples: check 12 isolated; check 12 reading 48213; \
            check 12 earth 0.4; check 12 seal intact.
            """
    )
    @Argument(help: "Task id.") var id: Int64
    @Argument(help: "The item's key (see: teamwork-worker checklist TASK).") var item: String
    // Everything after the item is the answer, as written: `check 21 reading -5` reads -5 as a value, not an option.
    @Argument(parsing: .captureForPassthrough, help: "The answer; yes when left out for a check item.") var words: [String] = []

    func run() async throws {
        let store = try WorkerHome().store()
        guard let task = try store.task(id: id) else { throw TeamworkError.notFound("no task \(id) on this device") }
        let kind = task.checklist?.item(item)?.kind
        let given = words.first == "--" ? Array(words.dropFirst()) : words
        let value = given.isEmpty ? nil : given.joined(separator: " ")
        if value == nil, kind == .photo {
            throw TeamworkError(
                .usage,
                "item \(TerminalText.inline(item)) is a photo: teamwork-worker attach \(id) FILE --item \(TerminalText.inline(item))")
        }
        if value == nil, kind == .signature {
            throw TeamworkError(
                .usage,
                "item \(TerminalText.inline(item)) is a signature: teamwork-worker sign \(id) FILE --signer NAME --item \(TerminalText.inline(item))"
            )
        }
        guard let value = value ?? (kind == .check ? "yes" : nil) else {
            throw TeamworkError(.usage, "item \(TerminalText.inline(item)) needs a value (see: teamwork-worker checklist \(id))")
        }
        try TaskChange.queue(.answer, id: id, item: item, value: value)
    }
}

struct Attach: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add a photo or a PDF to one of your tasks (works offline; uploaded, resumably, at the next sync).",
        discussion: "With --item, the photo answers that photo item of the task's checklist. JPEG, PNG, HEIC or PDF, at most 25 MB."
    )
    @Argument(help: "Task id.") var id: Int64
    @Argument(help: "The file.") var file: String
    @Option(help: "A photo item of the task's checklist that the photo answers.") var item: String?

    func run() async throws { try TaskChange.queue(.attach, id: id, item: item, file: file) }
}

struct Sign: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add someone's signature (a PNG or JPEG image) to one of your tasks (works offline).",
        discussion: "With --item, it answers that signature item of the task's checklist."
    )
    @Argument(help: "Task id.") var id: Int64
    @Option(help: "Who signed.") var signer: String
    @Argument(help: "The signature image.") var file: String
    @Option(help: "A signature item of the task's checklist that it answers.") var item: String?

    func run() async throws { try TaskChange.queue(.attach, id: id, item: item, file: file, signer: signer) }
}
