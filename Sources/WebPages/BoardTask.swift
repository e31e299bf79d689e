import CentralStore
import Foundation
import HTMLText
import Hummingbird
import ServerSupport
import TeamworkModel

/// One task as a dispatcher opens it from a card: what it is, who could take it and why,
/// what the field reported (checklist, photos, signatures), its history, and the actions.
struct TaskView: Sendable {
    var task: FieldTask
    var site: Location?
    var names: DisplayNames
    var ranking: Ranking?
    var workers: [Person]
    var history: [TaskHistoryEntry]
    var attachments: [AttachmentRecord]
    var now: Date
    /// Whom its messages go to, what they answered, and the messages.
    var customer: Customer? = nil
    var appointment: Appointment? = nil
    var messages: [CustomerMessage] = []
    /// Whom the task may name as its customer (the first 500 by name).
    var customers: [Customer] = []
    /// What was used on it (docs/dispatch.md, "Parts").
    var materials: [MaterialLine] = []
    /// Time on it, work and travel per person (docs/dispatch.md, "Time on the job").
    var time: [TimeEntry] = []

    static func load(_ store: any BoardReads, id: Int64, now: Date) async throws -> TaskView {
        let task = try await store.task(id: id)
        let site = try await task.locationID.asyncMap { try await store.location(id: $0) }
        let names = try await DisplayNames.load(store)
        let ranking = task.status.isClosed ? nil : try await store.suggest(taskID: id, teamID: nil, limit: nil, now: now)
        let workers = try await store.listPeople(role: .worker, teamID: nil).filter(\.isActive)
        return TaskView(
            task: task, site: site, names: names, ranking: ranking, workers: workers,
            history: try await store.history(taskID: id), attachments: try await store.attachments(ofTask: id), now: now,
            customer: try await store.taskCustomer(taskID: id), appointment: try await store.appointments(taskIDs: [id])[id],
            messages: try await store.customerMessages(taskID: id, customerID: nil, limit: 20),
            customers: try await store.customers(search: nil, limit: 500).filter { $0.erasedAt == nil },
            materials: try await store.materials(ofTask: id), time: try await store.timeEntries(ofTask: id))
    }
}

extension BoardRoutes {
    /// The task's page; with `problem`, why the last action was refused (and its status).
    func taskPage(_ id: Int64, _ request: Request, _ session: BoardSession, problem: BoardProblem?) async throws -> Response {
        let now = Date()
        let view = try await read { try await TaskView.load($0, id: id, now: now) }
        let back = FormFields.back(try query(request)["back"])
        let flash = self.flash(request)
        return BoardPages.response(
            BoardPages.layout(
                title: "Task \(id): \(view.task.title)", session: session, flash: problem == nil ? flash : nil, problem: problem?.message,
                bodyData: [("page", "task")], main: BoardPages.task(view, session: session, back: back)
            ), status: problem?.status ?? .ok, configuration: configuration)
    }
}

extension BoardRoutes {
    /// `GET /board/tasks/:id/cancel`: what cancelling will do, and the one form that does it.
    func cancelPage(_ request: Request, _ context: Context, _ session: BoardSession) async throws -> Response {
        let id = try taskID(context)
        let now = Date()
        let view = try await read { try await TaskView.load($0, id: id, now: now) }
        let back = FormFields.back(try query(request)["back"])
        let task = view.task
        let holder = task.assigneeID.map { view.names.people[$0] ?? String($0) }
        let main: HTML =
            task.status.isClosed
            ? "<h1>Task \(task.id) is \(BoardPages.label(task.status))</h1><p><a href=\"/board/tasks/\(task.id)\">Back to the task</a></p>"
            : """
            <h1>Cancel task \(task.id)?</h1>
            <p><strong>\(task.title)</strong>\(holder.map { ", \($0)'s" as HTML } ?? .empty)\
            \(task.window.map { ", \(BoardPages.span($0, in: task.zone, withZone: true))" as HTML } ?? .empty).</p>
            <p>It leaves the board and every worker's device shows it cancelled; work sent for it afterwards is set aside \
            for you to decide. You can reopen it from its page.</p>
            <form class="confirm-cancel" method="post" action="/board/tasks/\(task.id)/cancel">\
            <input type="hidden" name="csrf" value="\(session.csrf)"><input type="hidden" name="version" value="\(task.version)">\
            <input type="hidden" name="back" value="\(back)">\
            <button type="submit" class="danger">Yes, cancel it</button> <a href="/board/tasks/\(task.id)">No, keep it</a></form>
            """
        return BoardPages.response(
            BoardPages.layout(title: "Cancel task \(id)", session: session, bodyData: [("page", "task")], main: main),
            configuration: configuration)
    }
}

extension BoardPages {
    static func task(_ view: TaskView, session: BoardSession, back: String) -> HTML {
        let task = view.task
        let zone = task.zone
        let here = "/board/tasks/\(task.id)?back=" + FormFields.encode(back)
        func hidden() -> HTML {
            """
            <input type="hidden" name="csrf" value="\(session.csrf)"><input type="hidden" name="version" value="\(task.version)">\
            <input type="hidden" name="back" value="\(back)">
            """
        }
        var facts: [(String, String)] = [
            ("Status", label(task.status)), ("Priority", task.priority.rawValue),
            ("Team", task.teamID.map { view.names.teams[$0] ?? String($0) } ?? "none (a personal task)"),
            ("Assigned to", task.assigneeID.map { view.names.people[$0] ?? String($0) } ?? "nobody yet"),
            ("Site", siteLine(view.site).isEmpty ? "none" : siteLine(view.site)),
            ("Window", task.window.map { span($0, in: zone, withZone: true) } ?? "none"),
            ("Due", task.dueAt.map { when($0, in: zone) } ?? "none"),
            (
                "Expected",
                task.expectedArrival(at: Date()).map { when($0.at, in: zone) + ($0.runningLate ? ": running late" : "") }
                    ?? "not planned"
            ),
            ("Pinned", task.pinned ? "yes: the day planner leaves it with whoever has it" : "no"),
            ("Needs", task.requiredSkills.isEmpty ? "no particular skill" : task.requiredSkills.joined(separator: ", ")),
            ("Time zone", zone.name),
        ]
        // What the declaration says is shown by its label (TaskSchema): minutes on site, the reference, …
        facts += task.shownColumns.map { (BoardPages.capitalized($0.label), $0.value) }
        if let note = task.completionNote { facts.append(("Completion note", note)) }
        if let day = task.planDate, let plan = task.planID { facts.append(("Plan", "plan \(plan), occurrence of \(day)")) }
        let factRows: [HTML] = facts.map { "<dt>\($0.0)</dt><dd>\($0.1)</dd>" }
        let late: HTML = task.isLate(at: view.now) ? "<p class=\"problem\">This task is late.</p>" : .empty
        var actions: HTML = .empty
        if task.status.isClosed {
            actions = """
                <section aria-labelledby="undo-heading"><h2 id="undo-heading">Undo</h2>
                <form method="post" action="/board/tasks/\(task.id)/reopen">\(hidden())\
                <button type="submit">Reopen this task</button> <span class="reasons">back to \
                \(task.assigneeID.map { view.names.people[$0] ?? String($0) } ?? "its team")'s work</span></form></section>
                """
        } else {
            let candidates: [HTML] = (view.ranking?.candidates ?? []).map { candidate in
                """
                <li><form method="post" action="/board/tasks/\(task.id)/assign">\(hidden())<input type="hidden" name="person" value="\(candidate.personID)">\
                <button type="submit">Assign to \(candidate.name)</button> <span class="reasons">\(candidate.reasons.joined(separator: "; "))</span></form></li>
                """
            }
            let excluded: [HTML] = (view.ranking?.excluded ?? []).map { "<li>\($0.name): \($0.reason)</li>" }
            let options: [HTML] = view.workers.map { worker in
                "<option value=\"\(worker.id)\"\(worker.id == task.assigneeID ? HTML(" selected") : .empty)>\(worker.displayName)\(worker.skills.isEmpty ? "" : " (\(worker.skills.joined(separator: ", ")))")</option>"
            }
            let priorities: [HTML] = Priority.allCases.reversed().map { priority in
                "<option value=\"\(priority.rawValue)\"\(priority == task.priority ? HTML(" selected") : .empty)>\(priority.rawValue)</option>"
            }
            let noneBecause: HTML =
                (view.ranking?.candidates.isEmpty ?? false) ? "<p>Nobody can take it: \(view.ranking?.noneBecause ?? "")</p>" : .empty
            actions = """
                <section aria-labelledby="assign-heading"><h2 id="assign-heading">Assign</h2>
                <h3>Suggested, best first</h3>\(noneBecause)<ol class="candidates">\(candidates)</ol>
                \(excluded.isEmpty ? HTML.empty : "<h3>Not suggested</h3><ul class=\"excluded\">\(excluded)</ul>")
                <form id="assign-form" method="post" action="/board/tasks/\(task.id)/assign">\(hidden())
                <label for="person">Anyone</label> <select id="person" name="person">\(options)</select>
                <label><input type="checkbox" name="force" value="1"> even without a required skill (the history records it)</label>
                <button type="submit">Assign</button></form>
                \(task.assigneeID != nil && task.teamID != nil ? "<form method=\"post\" action=\"/board/tasks/\(task.id)/unassign\">\(hidden())<button type=\"submit\">Unassign (free for the team)</button></form>" as HTML : .empty)
                </section>
                <section aria-labelledby="change-heading"><h2 id="change-heading">Change</h2>
                <form method="post" action="/board/tasks/\(task.id)/window">\(hidden())<fieldset><legend>Window (\(zone.name))</legend>
                <label>From <input type="datetime-local" name="start" value="\(task.window.map { localInput($0.start, in: zone) } ?? "")"></label>
                <label>to <input type="datetime-local" name="end" value="\(task.window.map { localInput($0.end, in: zone) } ?? "")"></label>
                <button type="submit">Move the window</button></fieldset></form>
                <form method="post" action="/board/tasks/\(task.id)/priority">\(hidden())<label for="priority">Priority</label>
                <select id="priority" name="priority">\(priorities)</select> <button type="submit">Set priority</button></form>
                <form method="post" action="/board/tasks/\(task.id)/planning">\(hidden())<fieldset><legend>For the day planner</legend>
                <label>Minutes on site <input type="number" name="minutes" min="1" max="720" value="\(task.durationMinutes.map(String.init) ?? "")" placeholder="team's"></label>
                <label><input type="checkbox" name="pinned" value="1"\(task.pinned ? HTML(" checked") : .empty)> pinned: stays with its assignee</label>
                <button type="submit">Save</button></fieldset></form>
                <form method="get" action="/board/tasks/\(task.id)/cancel"><input type="hidden" name="back" value="\(back)">\
                <button type="submit" class="danger">Cancel this task…</button></form>
                </section>
                """
        }
        return """
            <p><a href="\(back)">Back to the board</a></p>
            <h1>Task \(task.id): \(task.title)</h1>\(late)
            \(task.description.isEmpty ? HTML.empty : "<p class=\"description\">\(task.description)</p>")
            <dl class="facts">\(factRows)</dl>
            \(actions)
            \(details(task, hidden: hidden()))
            \(checklist(view))
            \(customer(view, hidden: hidden()))
            \(materials(view))
            \(time(view))
            \(attachments(view))
            \(history(view, zone: zone))
            <p class="permalink"><a href="\(here)">Link to this task</a></p>
            """
    }

    /// A form for the columns a manager sets by name (TaskSchema's `manager`), each under its label: a closed task's
    /// too (the office's order number often comes after the work).
    static func details(_ task: FieldTask, hidden: HTML) -> HTML {
        let fields: [HTML] = DeclaredValues.settable.map { column in
            let label = BoardPages.capitalized(column.shown?.english ?? column.name)
            switch column.manager! {
            case .line(let bytes):
                return """
                    <label>\(label) <input type="text" name="\(column.name)" maxlength="\(bytes)" \
                    value="\(column.value(task).text ?? "")"></label>
                    """
            }
        }
        guard !fields.isEmpty else { return .empty }
        return """
            <section aria-labelledby="details-heading"><h2 id="details-heading">Details</h2>
            <form method="post" action="/board/tasks/\(task.id)/details">\(hidden)\(fields)
            <button type="submit">Save</button></form></section>
            """
    }

    /// The customer, what they answered (with the time they asked for, to accept), and the messages.
    static func customer(_ view: TaskView, hidden: HTML) -> HTML {
        let task = view.task
        let choices: [HTML] = view.customers.map { customer in
            "<option value=\"\(customer.id)\"\(customer.id == task.customerID ? HTML(" selected") : .empty)>\(customer.name)</option>"
        }
        let choose: HTML =
            task.status.isClosed || view.customers.isEmpty
            ? .empty
            : """
            <form method="post" action="/board/tasks/\(task.id)/customer" id="customer-form">\(hidden)\
            <label for="customer">Its own customer</label> <select id="customer" name="customer">\
            <option value=""\(task.customerID == nil ? HTML(" selected") : .empty)>the site's</option>\(choices)</select> \
            <button type="submit">Set</button></form>
            """
        guard let customer = view.customer else {
            return choose.text.isEmpty
                ? .empty
                : "<section aria-labelledby=\"customer-heading\"><h2 id=\"customer-heading\">Customer</h2><p>None.</p>\(choose)</section>"
        }
        let contact = [customer.email, customer.phone].compactMap { $0 }.joined(separator: ", ")
        var answer: HTML = .empty
        if let appointment = view.appointment {
            answer = "<p class=\"appointment answer-\(appointment.answer.rawValue)\">Answer: \(appointment.words(in: task.zone))</p>"
            if appointment.answer == .move, let asked = appointment.asked, !task.status.isClosed {
                answer = """
                    <p class="appointment answer-move">Asked to move to \(span(asked, in: task.zone, withZone: true))</p>
                    <form method="post" action="/board/tasks/\(task.id)/accept-move">\(hidden)\
                    <button type="submit">Move the visit to that time</button> <span class="reasons">the customer is sent the new time</span></form>
                    """
            }
        }
        let rows: [HTML] = view.messages.reversed().map { message in
            """
            <tr><td>\(message.kind.rawValue.replacingOccurrences(of: "_", with: " "))</td><td>\(message.channel.rawValue)</td>\
            <td>\(message.state.rawValue)</td><td>\(message.sentAt.map { when($0, in: task.zone) } ?? "")</td><td>\(message.reason ?? "")</td></tr>
            """
        }
        return """
            <section aria-labelledby="customer-heading"><h2 id="customer-heading">Customer</h2>
            <p>\(customer.name)\(contact.isEmpty ? "" : " (\(contact))")\(task.customerID == nil ? ", the site's customer" : "")\
            \(customer.consent ? "" : ": has not agreed to messages, so none is sent")</p>
            \(answer)\(choose)
            \(rows.isEmpty ? HTML.empty : "<table class=\"messages\"><thead><tr><th>Message</th><th>By</th><th>State</th><th>Sent</th><th>Why</th></tr></thead><tbody>\(rows)</tbody></table>")
            </section>
            """
    }

    static func checklist(_ view: TaskView) -> HTML {
        guard let form = view.task.checklist else { return .empty }
        let missing = Set(form.missing(in: view.task.answers)), failed = Set(form.failed(in: view.task.answers))
        let rows: [HTML] = form.items.map { item in
            let answer = view.task.answers[item.key]
            let state = failed.contains(item.key) ? "failed" : missing.contains(item.key) ? "missing" : answer == nil ? "" : "answered"
            let who = answer.map { "\(view.names.people[$0.by] ?? String($0.by)), \(when($0.date, in: view.task.zone))" } ?? ""
            let value: HTML
            if item.takesAttachment, let answer,
                let attachment = view.attachments.first(where: { $0.sha256 == answer.value && $0.item == item.key })
            {
                value =
                    attachment.mediaType.hasPrefix("image/") && attachment.mediaType != "image/heic"
                    ? "<a href=\"/board/attachments/\(attachment.id)\"><img class=\"thumb\" src=\"/board/attachments/\(attachment.id)\" alt=\"\(item.label)\" loading=\"lazy\"></a>"
                    : "<a href=\"/board/attachments/\(attachment.id)\">\(item.kind.rawValue) #\(attachment.id)</a>"
            } else {
                // A reading keeps its unit.
                value = "\(answer.map { $0.value + (item.unit.map { " \($0)" } ?? "") } ?? "")"
            }
            return
                "<tr class=\"\(state)\"><th scope=\"row\">\(item.label)\(item.required ? " *" : "")</th><td>\(value)</td><td>\(state)</td><td>\(who)</td></tr>"
        }
        return """
            <section aria-labelledby="checklist-heading"><h2 id="checklist-heading">Checklist \(form.name) (version \(form.version))</h2>
            <table><thead><tr><th scope="col">Item</th><th scope="col">Answer</th><th scope="col">State</th><th scope="col">By, when</th></tr></thead>
            <tbody>\(rows)</tbody></table><p>* required</p></section>
            """
    }

    /// What was used on the job: a line per worker and part, the day's price, the totals per currency.
    static func materials(_ view: TaskView) -> HTML {
        guard !view.materials.isEmpty else { return .empty }
        let rows: [HTML] = view.materials.map { line in
            let price = line.unitPrice.map { "\($0) \(line.currency ?? "")" } ?? "-"
            let total = line.total.map { "\($0) \(line.currency ?? "")" } ?? "-"
            return """
                <tr><td>\(line.partCode ?? "-")</td><th scope="row">\(line.name)</th>\
                <td class="number">\(line.quantity)\(line.unit.map { " \($0)" } ?? "")</td><td class="number">\(price)</td>\
                <td class="number">\(total)</td><td>\(line.personName ?? String(line.personID))</td></tr>
                """
        }
        let totals: [HTML] = MaterialLine.totals(view.materials).map { "<li>Total \($0.currency): \($0.total)</li>" }
        let unpriced = view.materials.filter { $0.total == nil }.count
        return """
            <section aria-labelledby="used-heading"><h2 id="used-heading">Used on the job</h2>
            <table class="materials"><thead><tr><th scope="col">Part</th><th scope="col">Name</th><th scope="col">Quantity</th>\
            <th scope="col">Unit price</th><th scope="col">Total</th><th scope="col">By</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            <ul class="totals">\(totals)\(unpriced > 0 ? "<li>\(unpriced) without a price</li>" as HTML : .empty)</ul></section>
            """
    }

    /// Time on the job: a line per person and kind, where it came from, and the task's labour.
    static func time(_ view: TaskView) -> HTML {
        guard !view.time.isEmpty else { return .empty }
        let zone = view.task.zone
        let rows: [HTML] = view.time.map { entry in
            """
            <tr><td data-label="Kind">\(entry.kind.rawValue)</td><th scope="row">\(entry.personName ?? String(entry.personID))</th>\
            <td data-label="From">\(when(entry.startedAt, in: zone))</td>\
            <td data-label="To">\(entry.endedAt.map { when($0, in: zone) } ?? "running")</td>\
            <td class="number" data-label="Hours">\(entry.minutes.map(TimeOnJob.hours) ?? "-")</td>\
            <td data-label="From where">\(entry.origin)</td></tr>
            """
        }
        let totals = TimeEntry.totals(view.time)
        return """
            <section aria-labelledby="time-heading"><h2 id="time-heading">Time on the job</h2>
            <table class="time"><thead><tr><th scope="col">Kind</th><th scope="col">Who</th><th scope="col">From</th>\
            <th scope="col">To</th><th scope="col">Hours</th><th scope="col">From where</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            <p>Labour: \(TimeOnJob.hours(totals.work)) work, \(TimeOnJob.hours(totals.travel)) travel.</p></section>
            """
    }

    static func attachments(_ view: TaskView) -> HTML {
        // A file that answers a checklist item shows there (as a thumbnail), not a second time here.
        let answering = view.attachments.filter { record in
            record.item.flatMap { view.task.answers[$0]?.value } == record.sha256
        }.map(\.id)
        let shown = view.attachments.filter { !answering.contains($0.id) }
        guard !shown.isEmpty else { return .empty }
        let items: [HTML] = shown.map { record in
            let caption =
                "\(record.item.map { "for \($0), " } ?? "")\(record.signer.map { "signed by \($0), " } ?? "")by \(view.names.people[record.personID] ?? String(record.personID)), \(when(record.capturedAt, in: view.task.zone))"
            if record.mediaType.hasPrefix("image/") && record.mediaType != "image/heic" {
                return
                    "<figure><a href=\"/board/attachments/\(record.id)\"><img src=\"/board/attachments/\(record.id)\" alt=\"Photo \(record.id): \(caption)\" loading=\"lazy\"></a><figcaption>\(caption)</figcaption></figure>"
            }
            return
                "<p><a href=\"/board/attachments/\(record.id)\">\(record.mediaType) #\(record.id)</a> (\(record.size / 1024) KB), \(caption)</p>"
        }
        return
            "<section aria-labelledby=\"photos-heading\" class=\"attachments\"><h2 id=\"photos-heading\">Photos, signatures and files</h2>\(items)</section>"
    }

    static func history(_ view: TaskView, zone: Zone) -> HTML {
        let words = HistoryWords(people: view.names.people, teams: view.names.teams, zone: zone)
        let rows: [HTML] = view.history.map { entry in
            let changes: [HTML] = words.lines(entry).map { "<li>\($0)</li>" }
            return """
                <tr><td>\(words.when(entry.changedAt))</td><td>\(words.what(entry))</td><td>\(words.who(entry))</td>\
                <td><ul class="changes">\(changes)</ul></td></tr>
                """
        }
        return """
            <section aria-labelledby="history-heading"><h2 id="history-heading">History</h2>
            <table class="history"><thead><tr><th scope="col">When</th><th scope="col">What</th><th scope="col">Who</th><th scope="col">Changes</th></tr></thead>
            <tbody>\(rows)</tbody></table></section>
            """
    }
}
