import BlobStore
import CentralStore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServerSupport
import TeamworkModel

extension BoardRoutes {
    /// `GET /board/changes?after=N`: answers `{"position": "M"}` as soon as the master's change
    /// feed is past (or, after a restore, before) `N`, else after ``BoardConfiguration/longPoll``.
    /// The board's script asks again at once, and redraws when the position moved.
    func changes(_ request: Request, _ context: Context) async throws -> Response {
        guard try await session(request, context) != nil else { throw BoardProblem(.unauthorized, "sign in again") }
        let after = try query(request)["after"]
        let deadline = ContinuousClock.now + configuration.longPoll
        while true {
            let generation = feed.generation
            let head = try await read { try await $0.boardHead() }
            let now = ContinuousClock.now
            if after == nil || head != after || now >= deadline || feed.isClosed || Task.isCancelled {
                return BoardPages.json(["position": head])
            }
            await feed.pause(for: min(deadline - now, feed.isListening ? .seconds(5) : .seconds(1)), after: generation)
        }
    }

    /// Runs one change as the signed-in person and answers as the caller wants it:
    /// JSON for the board's script, else back to the page the form came from (303) with
    /// a line saying what was done. Refusals: a page with the reason (or JSON), nothing changed.
    func act(
        _ request: Request, _ context: Context, refused: @escaping (BoardProblem, BoardSession) async throws -> Response,
        _ body: @Sendable @escaping (CentralStore, FormFields) async throws -> String
    ) async throws -> Response {
        let wantsJSON = request.headers[.accept]?.contains("application/json") == true
        return try await act(request, context, refused: refused, body) { message, form, _ in
            if wantsJSON { return BoardPages.json(["message": message]) }
            var response = redirect(to: FormFields.back(form["back"]))
            response.headers[values: .setCookie].append(cookie(Self.flashCookie, FormFields.encode(message), maxAge: 60))
            return response
        }
    }

    /// The same, answering with `show` (a page of what was done: a pairing link shown once).
    func act<R: Sendable>(
        _ request: Request, _ context: Context, refused: (BoardProblem, BoardSession) async throws -> Response,
        _ body: @Sendable @escaping (CentralStore, FormFields) async throws -> R,
        show: (R, FormFields, BoardSession) async throws -> Response
    ) async throws -> Response {
        let wantsJSON = request.headers[.accept]?.contains("application/json") == true
        guard let session = try await session(request, context) else {
            if wantsJSON { throw BoardProblem(.unauthorized, "your session has ended: sign in again") }
            return redirect(to: "/board/sign-in?ended=1")
        }
        let form = try await readForm(request)
        guard checkForgery(request, form, expected: session.csrf) else {
            logger.notice(
                "board: refused a forged or stale form", metadata: ["person": "\(session.person.id)", "path": "\(request.uri.path)"])
            throw forged
        }
        // A transaction as the signed-in person holds a master connection: reserved before it is opened.
        guard case .success(let place) = actions.reserve(for: session.person.id) else {
            let problem = BoardProblem(
                .serviceUnavailable, "The board is busy with other changes: nothing was changed; try again in a moment.")
            if wantsJSON { throw problem }
            return busy(try await refused(problem, session), retryAfter: 1)
        }
        defer { place.release() }
        let result: R
        do {
            result = try await changes.withStore(actorID: session.person.id, queryDeadline: .seconds(10)) { store in
                try await body(store, form)
            }
        } catch {
            var known = (error as? any ShownError).map(BoardProblem.init)
            if known?.status == .serviceUnavailable || error is QueryDeadlineExceeded {
                known = BoardProblem(
                    .serviceUnavailable, "The master database is not available: nothing was changed; try again in a moment.")
            }
            guard let problem = known, problem.status.code < 500 || problem.status == .serviceUnavailable else {
                logger.error("board: an action failed", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
                throw error
            }
            if wantsJSON { throw problem }
            return try await refused(problem, session)
        }
        if let message = result as? String { logger.info("board: \(message)", metadata: ["person": "\(session.person.id)"]) }
        return try await show(result, form, session)
    }

    func taskAction(_ request: Request, _ context: Context, action named: String? = nil) async throws -> Response {
        let id = try taskID(context)
        let action = named ?? context.parameters.get("action") ?? ""
        let refused: (BoardProblem, BoardSession) async throws -> Response = { problem, session in
            try await taskPage(id, request, session, problem: problem)
        }
        switch action {
        case "assign":
            return try await act(request, context, refused: refused) { store, form in
                let version = try form.version()
                let current = try await store.task(id: id)
                guard let text = form["person"], let personID = Int64(text) else {
                    throw BoardProblem(.unprocessableContent, "choose whom to assign task \(id) to")
                }
                let person = try await store.person(id: personID)
                // A personal task stays personal; a team's task stays with its team when the person is in it,
                // else goes to the person's one team among those the board shows (a drag to another crew's
                // column). Anything less clear is refused rather than guessed.
                let theirTeams = try await store.teams(ofPerson: personID)
                let shown = Set(form.all("team").compactMap(Int64.init))
                let team: Int64?
                if let own = current.teamID, theirTeams.contains(where: { $0.id == own }) {
                    team = own
                } else if current.teamID == nil {
                    team = nil
                } else {
                    let choices = theirTeams.filter { shown.isEmpty || shown.contains($0.id) }
                    guard choices.count == 1 else {
                        throw BoardProblem(
                            .unprocessableContent,
                            choices.isEmpty
                                ? "\(person.displayName) is not in task \(id)'s team\(theirTeams.isEmpty ? " nor in any team" : ""): add them to it first, or choose someone in it"
                                : "\(person.displayName) is in \(choices.map(\.slug).joined(separator: " and ")), not in task \(id)'s team: show one team on the board and drag there, or use the CLI with --team"
                        )
                    }
                    team = choices[0].id
                }
                let task = try await store.assignTask(
                    id: id, to: try Assignment(teamID: team, assigneeID: personID),
                    expectedVersion: version, force: form["force"] == "1")
                return "Task \(task.id) assigned to \(person.displayName)"
            }
        case "unassign":
            return try await act(request, context, refused: refused) { store, form in
                let current = try await store.task(id: id)
                guard let team = current.teamID else {
                    throw BoardProblem(.unprocessableContent, "task \(id) has no team to go back to: assign it to someone else instead")
                }
                let task = try await store.assignTask(
                    id: id, to: try Assignment(teamID: team, assigneeID: nil),
                    expectedVersion: try form.version())
                return "Task \(task.id) is free for its team again"
            }
        case "customer":
            return try await act(request, context, refused: refused) { store, form in
                let text = (form["customer"] ?? "").trimmingCharacters(in: .whitespaces)
                var customer: Customer?
                if !text.isEmpty {
                    guard text.count <= 19, let id = Int64(text) else { throw BoardProblem(.unprocessableContent, "choose a customer") }
                    customer = try await store.customer(id: id)
                    guard customer?.erasedAt == nil else { throw BoardProblem(.unprocessableContent, "that customer was erased") }
                }
                let task = try await store.updateTask(
                    id: id, try TaskChanges(customerID: .some(customer?.id)), expectedVersion: try form.version())
                return customer.map { "Task \(task.id)'s customer is \($0.name)" } ?? "Task \(task.id) has its site's customer"
            }
        case "accept-move":
            return try await act(request, context, refused: refused) { store, form in
                guard let asked = try await store.appointments(taskIDs: [id])[id], asked.answer == .move, let window = asked.asked else {
                    throw BoardProblem(.conflict, "task \(id)'s customer has not asked to move it")
                }
                let task = try await store.updateTask(id: id, try TaskChanges(window: .some(window)), expectedVersion: try form.version())
                return "Task \(task.id) moved to the time its customer asked for; they are sent it"
            }
        case "priority":
            return try await act(request, context, refused: refused) { store, form in
                guard let priority = form["priority"].flatMap(Priority.init(rawValue:)) else {
                    throw BoardProblem(
                        .unprocessableContent, "priority must be one of \(Priority.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                let task = try await store.updateTask(id: id, TaskChanges(priority: priority), expectedVersion: try form.version())
                return "Task \(task.id) is now \(priority.rawValue) priority"
            }
        case "window":
            return try await act(request, context, refused: refused) { store, form in
                let current = try await store.task(id: id)
                let window = try form.window(in: current.zone)
                let task = try await store.updateTask(id: id, TaskChanges(window: .some(window)), expectedVersion: try form.version())
                return "Task \(task.id) moved to \(window.map { BoardPages.span($0, in: task.zone, withZone: true) } ?? "no window")"
            }
        case "planning":
            return try await act(request, context, refused: refused) { store, form in
                let text = (form["minutes"] ?? "").trimmingCharacters(in: .whitespaces)
                var minutes: Int?
                if !text.isEmpty {
                    guard text.count <= 4, let value = Int(text) else {
                        throw BoardProblem(.unprocessableContent, "minutes on site are a whole number, 1 to 720")
                    }
                    minutes = value
                }
                let task = try await store.updateTask(
                    id: id, TaskChanges(durationMinutes: .some(minutes), pinned: form["pinned"] == "1"),
                    expectedVersion: try form.version())
                return "Task \(task.id): \(task.durationMinutes.map { "\($0) min on site" } ?? "the team's minutes on site")"
                    + (task.pinned ? ", pinned" : ", not pinned")
            }
        case "details":
            return try await act(request, context, refused: refused) { store, form in
                var changes = try TaskChanges()
                // The columns the form carries (an older page lacks a column declared since: it is left as it is).
                for column in DeclaredValues.settable {
                    if let value = form[column.name] { try changes.declared.set(column.name, to: value) }
                }
                guard !changes.isEmpty else { throw BoardProblem(.unprocessableContent, "nothing to save") }
                let task = try await store.updateTask(id: id, changes, expectedVersion: try form.version())
                return "Task \(task.id): details saved"
            }
        case "cancel":
            return try await act(request, context, refused: refused) { store, form in
                let task = try await store.cancelTask(id: id, expectedVersion: try form.version())
                return "Task \(task.id) cancelled (reopen it from its page to undo)"
            }
        case "reopen":
            return try await act(request, context, refused: refused) { store, form in
                let task = try await store.reopenTask(id: id, expectedVersion: try form.version())
                return "Task \(task.id) reopened"
            }
        default:
            throw BoardProblem(.notFound, "no such action")
        }
    }

    func createTask(_ request: Request, _ context: Context) async throws -> Response {
        let fields = Locked<FormFields?>(nil)
        return try await act(
            request, context,
            refused: { problem, session in
                try await newTaskPage(request, session, problem: problem, form: fields.value)
            }
        ) { store, form in
            fields.mutate { $0 = form }
            let team = try await (form["team"].flatMap(Int64.init)).asyncMap { try await store.team(id: $0) }
            let assignee = try await (form["assignee"].flatMap(Int64.init)).asyncMap { try await store.person(id: $0) }
            let site = try await (form["site"].flatMap(Int64.init)).asyncMap { try await store.location(id: $0) }
            guard team != nil || assignee != nil else {
                throw BoardProblem(.unprocessableContent, "give the task a team, a person, or both")
            }
            let description = form["description"] ?? ""
            guard description.utf8.count <= 4_000 else {
                throw BoardProblem(.unprocessableContent, "the description may be at most 4,000 bytes")
            }
            let priority =
                try form["priority"].map { text in
                    guard let value = Priority(rawValue: text) else { throw BoardProblem(.unprocessableContent, "no priority '\(text)'") }
                    return value
                } ?? .normal
            let skills = try Skills.parse(form["skills"] ?? "", most: Skills.mostPerTask, field: "skills")
            let zone = try await store.timeZone(location: site?.id, team: team?.id, assignee: assignee?.id)
            let window = try form.window(in: zone)
            let due = try (form["due"].flatMap { $0.isEmpty ? nil : $0 }).map { try zone.endOfDay(LocalDate(parsing: $0, field: "due")) }
            var new = try NewTask(
                title: form["title"] ?? "", description: description, priority: priority,
                assignment: try Assignment(teamID: team?.id, assigneeID: assignee?.id), locationID: site?.id,
                dueAt: due, requiredSkills: skills, window: window)
            new.checklist = form["checklist"].flatMap { $0.isEmpty ? nil : $0 }
            let task = try await store.createTask(new, force: form["force"] == "1")
            return "Task \(task.id) created: \(task.title)"
        }
    }

    /// `GET /board/attachments/{id}`: a photo, signature or PDF of a task, to the signed-in only.
    /// Served as the type it was checked to be, never sniffed, never run (a sandbox CSP); PDFs download.
    func attachment(_ request: Request, _ context: Context) async throws -> Response {
        guard try await session(request, context) != nil else { throw BoardProblem(.unauthorized, "sign in to see attachments") }
        guard let text = context.parameters.get("id"), let id = Int64(text) else { throw BoardProblem(.notFound, "no such attachment") }
        let record = try await read { store -> AttachmentRecord? in
            do { return try await store.attachment(id: id) } catch let error as TeamworkError where error.code == .notFound { return nil }
        }
        guard let record, let digest = BlobDigest(hex: record.sha256) else { throw BoardProblem(.notFound, "no such attachment") }
        let blobs = self.blobs
        let data: Data
        do {
            data = try await blockingWork {
                var bytes = Data()
                try blobs.read(digest) { bytes.append($0) }
                return bytes
            }
        } catch {
            logger.error("board: an attachment's file cannot be read", metadata: ["attachment": "\(id)", "error": "\(error)"])
            throw BoardProblem(
                .notFound, "attachment \(id)'s file is not on this server (teamwork-service verify --blobs says which are missing)")
        }
        var headers: HTTPFields = [
            .contentType: record.mediaType, .cacheControl: "no-store",
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            .contentSecurityPolicy: "default-src 'none'; sandbox",
        ]
        if record.mediaType == "application/pdf" {
            headers[.contentDisposition] = "attachment; filename=\"task-\(record.taskID ?? 0)-attachment-\(record.id).pdf\""
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

extension FormFields {
    /// The version a form was made from: a change to a task someone changed since is refused (409).
    func version() throws -> Int? {
        guard let text = self["version"], !text.isEmpty else { return nil }
        guard let version = Int(text), version > 0 else { throw BoardProblem(.unprocessableContent, "version must be a positive number") }
        return version
    }

    /// `start` and `end` as `YYYY-MM-DDTHH:MM` on the task's wall clock (what `<input type=datetime-local>`
    /// sends); both empty: no window.
    func window(in zone: Zone) throws -> TimeWindow? {
        let start = self["start"] ?? "", end = self["end"] ?? ""
        if start.isEmpty && end.isEmpty { return nil }
        func instant(_ text: String, _ field: String) throws -> Date {
            let parts = text.split(separator: "T", maxSplits: 1)
            guard parts.count == 2, [5, 8].contains(parts[1].utf8.count), text.utf8.count <= 19 else {
                throw BoardProblem(.unprocessableContent, "\(field) must be a date and a time, like 2026-12-01T09:00")
            }
            let time = String(parts[1])
            return zone.instant(try LocalDate(parsing: String(parts[0]), field: field), try LocalTime(parsing: time, field: field))
        }
        return try TimeWindow(start: try instant(start, "start"), end: try instant(end, "end"))
    }
}
