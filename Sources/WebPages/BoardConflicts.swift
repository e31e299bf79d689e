import CentralStore
import Foundation
import HTMLText
import Hummingbird
import TeamworkModel

/// Field work the master set aside (a conflict), as the conflicts inbox shows it: who did what to
/// which task, when on the task's clock, why it was set aside, and what the task is now.
struct ConflictsView: Sendable {
    struct Item: Sendable {
        var conflict: FieldConflict
        /// The task as it is now (nil: deleted).
        var task: FieldTask?
    }

    /// At most this many open conflicts are shown, oldest first (the rest after those are decided).
    static let shown = 200

    var items: [Item]
    var open: Int
    var names: DisplayNames
    var feed: String

    static func load(_ store: any BoardReads) async throws -> ConflictsView {
        let feed = try await store.boardHead()
        let open = try await store.conflicts(includeResolved: false, taskID: nil)
        let listed = open.prefix(shown)
        let tasks = try await store.tasks(ids: Array(Set(listed.compactMap(\.taskID))))
        let items = listed.map { Item(conflict: $0, task: $0.taskID.flatMap { tasks[$0] }) }
        return ConflictsView(items: items, open: open.count, names: try await DisplayNames.load(store), feed: feed)
    }
}

extension BoardRoutes {
    func conflictsPage(_ request: Request, _ session: BoardSession, problem: BoardProblem? = nil) async throws -> Response {
        let view = try await read { try await ConflictsView.load($0) }
        if problem == nil, try query(request)["part"] == "live" {
            return BoardPages.response(BoardPages.conflictList(view, session: session), configuration: configuration)
        }
        let flash = self.flash(request)
        return BoardPages.response(
            BoardPages.layout(
                title: "Conflicts", session: session, current: "conflicts", flash: problem == nil ? flash : nil,
                problem: problem?.message, bodyData: [("page", "conflicts"), ("feed", view.feed)],
                main: """
                    <h1>Conflicts</h1>
                    <p class="lead">Field work the master set aside because the task had changed meanwhile: \
                    nothing here is lost, and nothing is decided until you decide it.</p>
                    <div id="live">\(BoardPages.conflictList(view, session: session))</div>
                    """
            ), status: problem?.status ?? .ok, configuration: configuration)
    }

    /// `POST /board/conflicts/:id/accept` (the completion as the worker's work) and `…/dismiss` (with a reason).
    func conflictAction(_ request: Request, _ context: Context) async throws -> Response {
        guard let text = context.parameters.get("id"), let id = Int64(text), id > 0 else {
            throw BoardProblem(.notFound, "no such conflict")
        }
        let refused: (BoardProblem, BoardSession) async throws -> Response = { problem, session in
            try await conflictsPage(request, session, problem: problem)
        }
        switch context.parameters.get("action") ?? "" {
        case "accept":
            return try await act(request, context, refused: refused) { store, _ in
                let (conflict, task) = try await store.acceptConflict(id: id)
                return conflict.accepted(taskID: task.id)
            }
        case "dismiss":
            return try await act(request, context, refused: refused) { store, form in
                let conflict = try await store.dismissConflict(id: id, reason: form["reason"] ?? "")
                return "Dismissed what \(conflict.personName ?? "the worker") did\(conflict.taskID.map { " on task \($0)" } ?? "")"
            }
        default:
            throw BoardProblem(.notFound, "no such action")
        }
    }
}

extension BoardPages {
    /// The mark on a card whose task has field work waiting for a decision.
    static func conflictMark(first: Int64, count: Int) -> HTML {
        """
        <p class="conflict-line"><a class="conflict-mark" href="/board/conflicts#conflict-\(first)">\
        ⚠ \(quantity(count, "field change")) to decide</a></p>
        """
    }

    /// The part of the inbox a live refresh replaces.
    static func conflictList(_ view: ConflictsView, session: BoardSession) -> HTML {
        let summary: HTML =
            view.open == 0
            ? "Nothing waits for a decision."
            : "<strong>\(view.open)</strong> \(view.open == 1 ? "change waits" : "changes wait") for a decision, oldest first\(view.open > view.items.count ? HTML(" (the first \(view.items.count) shown)") : .empty)."
        let items: [HTML] = view.items.map { item in
            "<li id=\"conflict-\(item.conflict.id)\">\(conflict(item, names: view.names, session: session))</li>"
        }
        return """
            <p class="summary" data-feed="\(view.feed)">\(summary)</p>
            \(items.isEmpty ? HTML.empty : "<ol class=\"conflicts\">\(items)</ol>")
            """
    }

    static func conflict(_ item: ConflictsView.Item, names: DisplayNames, session: BoardSession) -> HTML {
        let conflict = item.conflict
        let worker = conflict.personName ?? "Person \(conflict.personID)"
        let zone = item.task?.zone ?? .utc
        let title: HTML =
            if let task = item.task {
                "<a href=\"/board/tasks/\(task.id)?back=/board/conflicts\">\(task.title)</a> (task \(task.id))"
            } else {
                "\(conflict.taskTitle ?? "a task") (deleted since)"
            }
        let note: HTML = conflict.note.map { $0.isEmpty ? .empty : "<p class=\"note\">Their note: “\($0)”</p>" } ?? .empty
        let outcome = conflict.applied ? "Applied, but listed for you" : "Not applied"
        let detail: HTML = conflict.detail.map { $0.isEmpty ? .empty : " <span class=\"detail\">(\($0))</span>" } ?? .empty
        let now: HTML =
            item.task.map { task in
                let holder = task.assigneeID.map { names.people[$0] ?? "person \($0)" }
                let team = task.teamID.flatMap { names.teams[$0] }
                return
                    "<p class=\"now\">Now: \(label(task.status))\(holder.map { ", \($0)'s" as HTML } ?? ", nobody's")\(team.map { " in \($0)" as HTML } ?? .empty).</p>"
            } ?? .empty
        let hidden: HTML = """
            <input type="hidden" name="csrf" value="\(session.csrf)"><input type="hidden" name="back" value="/board/conflicts">
            """
        // A use or a time entry set aside is accepted as the worker gave it (a manager's correction), completed tasks included.
        let entry = ["use", "time"].contains(conflict.operation) && !conflict.applied
        let canAccept =
            (entry && (item.task.map { $0.status != .cancelled || conflict.operation == "time" } ?? false))
            || (conflict.operation == "complete"
                && (conflict.applied || (item.task.map { $0.status != .completed && $0.status != .cancelled } ?? false)))
        let accept: HTML =
            canAccept
            ? """
            <form class="accept" method="post" action="/board/conflicts/\(conflict.id)/accept">\(hidden)\
            <button type="submit">\(entry ? "Accept as \(worker) recorded it" : conflict.applied ? "Accept" : "Accept as done by \(worker)")</button></form>
            """
            : .empty
        let reopen: HTML =
            conflict.operation == "complete" && !conflict.applied && item.task?.status == .completed
            ? "<p class=\"hint\">The task was completed since; reopen it from its page to accept this instead, or dismiss this.</p>"
            : .empty
        return """
            <article class="conflict rule-\(conflict.rule)">\
            <h2>\(worker) \(verb(conflict.operation)) \(title)</h2>\
            <p class="when">On the phone at \(when(conflict.madeAt, in: zone)); the master had it at \(when(conflict.recordedAt, in: zone)).</p>\
            \(note)\
            <p class="why">\(outcome): \(reason(conflict.rule)).\(detail)</p>\
            \(now)\(reopen)\
            <div class="decide">\(accept)\
            <form class="dismiss" method="post" action="/board/conflicts/\(conflict.id)/dismiss">\(hidden)\
            <label>Reason <input name="reason" required maxlength="500" placeholder="e.g. Bo redid it"></label> \
            <button type="submit">Dismiss</button></form></div>\
            </article>
            """
    }

    /// What the worker did, in words.
    static func verb(_ operation: String) -> String {
        switch operation {
        case "complete": "completed"
        case "start": "started"
        case "claim": "took"
        case "reopen": "reopened"
        case "answer": "answered a checklist item of"
        case "attach": "attached a file to"
        case "use": "recorded what was used on"
        case "time": "recorded time on"
        case "checkin": "checked in at"
        default: operation
        }
    }

    /// Why the master set it aside, in words (the rules of docs/listener.md).
    static func reason(_ rule: String) -> String {
        switch rule {
        case "rejected": "the sync endpoint refused it when the phone synced, because the task had changed"
        case "deleted": "the task had been deleted"
        case "cancelled": "the task had been cancelled"
        case "already_completed": "someone had completed the task first"
        case "moved": "the task had moved to another team"
        case "reassigned": "the task had been given to someone else"
        case "not_completed": "the task was not completed by them"
        case "claimed_by_other": "someone else had taken the task first"
        case "not_a_member": "they are no longer in the task's team"
        case "missing_skills": "they lack a skill the task needs"
        case "missing_answers": "required checklist answers were missing"
        case "invalid_answer": "the answer does not fit the checklist item"
        case "invalid_attachment": "the file does not fit the checklist item"
        case "invalid_material": "the part is not in the catalogue, is retired, or the quantity is out of bounds"
        case "invalid_time": "the time entry is not work or travel, ends before it starts, or lasts more than a day"
        case "superseded": "a later entry for that line or time was recorded first"
        case "not_held": "they never held the task: time is recorded by who worked it"
        case "time_overlap": "it overlaps another of their time entries"
        case "period_closed": "payroll closed those days"
        case "corrected_by_manager": "a manager had corrected that time; accept to replace the correction with theirs"
        default: "the master could not take it"
        }
    }
}
