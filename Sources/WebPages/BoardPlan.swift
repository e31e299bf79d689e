import CentralStore
import DayPlanner
import Foundation
import HTMLText
import Hummingbird
import RoadTravel
import ServerSupport
import TeamworkModel

extension BoardRoutes {
    /// `GET /board/plan?team=red&day=2026-12-01[&from=now]`: the planner's day for one team, every
    /// move shown before anything changes, with a form that accepts exactly this plan.
    ///
    /// A plan costs up to a second of one core: one is made at a time in the whole board (the
    /// ``planning`` budget), off Swift's cooperative threads; a second asks again in a moment.
    func planPage(_ request: Request, _ session: BoardSession) async throws -> Response {
        let query = try query(request)
        guard let slug = query["team"], !slug.isEmpty else { throw BoardProblem(.unprocessableContent, "choose a team to plan") }
        guard slug.count <= 40 else { throw BoardProblem(.unprocessableContent, "no team '\(slug)'") }
        let replan = query["from"] == "now"
        guard case .success(let place) = planning.reserve(for: session.person.id) else {
            throw BoardProblem(.serviceUnavailable, "The planner is busy with another plan: try again in a moment.")
        }
        defer { place.release() }
        let facts = try await read { store -> DayFacts in
            guard let team = try await store.listTeams().map(\.team).first(where: { $0.slug == slug }) else {
                throw BoardProblem(.notFound, "no team '\(slug)'")
            }
            let zone = Zone.reading(team.timeZone)
            let day =
                try query["day"].flatMap { $0.isEmpty ? nil : $0 }.map { try LocalDate(parsing: $0, field: "day") } ?? zone.date(of: Date())
            return try await store.dayFacts(teamID: team.id, day: day)
        }
        let request = DayRequest(facts: facts, hours: .usual, from: replan ? Date() : nil)
        let travel = await TravelTimes.matrix(
            DayPlan.places(request), estimate: request.travel, osrm: configuration.osrm, logger: logger)
        let plan = try await blockingWork { DayPlan.plan(request, travel: travel, timeLimit: .seconds(1)) }
        let sites = facts.sites
        let tasks = Dictionary(uniqueKeysWithValues: facts.tasks.map { ($0.id, $0) })
        return BoardPages.response(
            BoardPages.layout(
                title: "Plan for \(facts.team.name) on \(facts.day)", session: session, current: "board",
                main: BoardPages.plan(plan, team: facts.team, tasks: tasks, sites: sites, replan: replan, session: session)),
            configuration: configuration)
    }

    /// `POST /board/messages/release`: sends a held day's customer messages (`day`, and `team`, empty
    /// for the hold of every team), as the signed-in manager.
    func releaseMessages(_ request: Request, _ context: Context) async throws -> Response {
        try await act(request, context, refused: refusedPage(title: "Nothing released", heading: "Nothing was released")) {
            store, form in
            let day = try LocalDate(parsing: form["day"] ?? "", field: "day")
            let team = form["team"] ?? ""
            guard team.isEmpty || Int64(team).map({ $0 > 0 }) == true else { throw BoardProblem(.unprocessableContent, "no such team") }
            let released = try await store.releaseMessages(day: day, teamID: Int64(team))
            return MessageHold.released(released, on: day)
        }
    }

    /// The page an action refused shows: its heading, the problem in the flash, and the way back.
    func refusedPage(title: String, heading: String) -> (BoardProblem, BoardSession) async throws -> Response {
        { problem, session in
            BoardPages.response(
                BoardPages.layout(
                    title: title, session: session, current: "board", problem: problem.message,
                    main: "<h1>\(heading)</h1><p><a href=\"/board\">Back to the board</a></p>"),
                status: problem.status, configuration: configuration)
        }
    }

    /// `POST /board/plan`: makes the plan the preview showed, in one transaction as the signed-in
    /// manager. Each `a` field is one task as the plan leaves it (`task:version:person:start`, an
    /// empty person for the team, an empty start for none); a task changed since the preview
    /// refuses the whole plan.
    func applyPlan(_ request: Request, _ context: Context) async throws -> Response {
        try await act(request, context, refused: refusedPage(title: "Plan not applied", heading: "The plan was not applied")) {
            store, form in
            guard let teamText = form["team"], let teamID = Int64(teamText), teamID > 0 else {
                throw BoardProblem(.unprocessableContent, "a plan names its team")
            }
            let day = try LocalDate(parsing: form["day"] ?? "", field: "day")
            let team = try await store.team(id: teamID)
            let span = Zone.reading(team.timeZone).day(day)
            let fields = form.all("a")
            guard !fields.isEmpty, fields.count <= 5000 else {
                throw BoardProblem(.unprocessableContent, "a plan has 1 to 5000 tasks")
            }
            let assignments = try fields.map { try Self.assignment($0, within: span) }
            let applied = try await store.applyDayPlan(teamID: teamID, day: day, assignments)
            return "Planned \(quantity(applied.count, "task")) of \(team.name) on \(day)"
        }
    }

    /// One `task:version:person:start` field of the accept form, checked: ids positive, a start
    /// within a day of the planned day.
    static func assignment(_ text: String, within span: DateInterval) throws -> PlannedAssignment {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        let bad = BoardProblem(.unprocessableContent, "a plan's task reads task:version:person:start")
        guard text.utf8.count <= 80, parts.count == 4, let task = Int64(parts[0]), task > 0, let version = Int(parts[1]),
            version > 0
        else { throw bad }
        var person: Int64?
        if !parts[2].isEmpty {
            guard let id = Int64(parts[2]), id > 0 else { throw bad }
            person = id
        }
        var start: Date?
        if !parts[3].isEmpty {
            guard let seconds = Double(parts[3]), seconds.isFinite else { throw bad }
            let date = Date(timeIntervalSince1970: seconds)
            guard date >= span.start.addingTimeInterval(-86400), date <= span.end.addingTimeInterval(86400) else {
                throw BoardProblem(.unprocessableContent, "a planned start lies outside the planned day")
            }
            start = date
        }
        return PlannedAssignment(taskID: task, version: version, assigneeID: person, plannedStart: start)
    }
}

extension BoardPages {
    /// A form that opens the planner's preview for a team and day.
    static func planButton(_ view: DayView) -> HTML {
        let options: [HTML] = view.teams.map { team in
            "<option value=\"\(team.slug)\"\(view.chosen.first?.id == team.id ? HTML(" selected") : .empty)>\(team.name)</option>"
        }
        return """
            <form class="plan-day" method="get" action="/board/plan"><input type="hidden" name="day" value="\(view.day.description)">\
            <label>Team <select name="team">\(options)</select></label> \
            <label><input type="checkbox" name="from" value="now"> from now (keep what is done)</label> \
            <button type="submit">Plan the day</button></form>
            """
    }

    static func plan(
        _ plan: DayPlan, team: Team, tasks: [Int64: FieldTask], sites: [Int64: Location], replan: Bool, session: BoardSession
    ) -> HTML {
        let zone = Zone.reading(team.timeZone)
        // Plans' times are whole minutes: read as the cards read an ETA.
        func time(_ date: Date) -> String { clock(zone.time(of: date)) }
        let names = Dictionary(plan.routes.map { ($0.personID, $0.name) } + plan.away.map { ($0.personID, $0.name) }) { a, _ in a }
        let routes: [HTML] = plan.routes.map { route in
            let rows: [HTML] = route.visits.map { visit in
                let site = siteLine(tasks[visit.taskID]?.locationID.flatMap { sites[$0] })
                let move = visit.words(names: names, clock: time)
                let when = visit.started ? "under way" : "\(time(visit.starts))–\(time(visit.ends))"
                return """
                    <tr class="\(visit.moved ? "moved" : visit.retimed ? "retimed" : "kept")" data-task="\(visit.taskID)"><td>\(when)</td>\
                    <td><a href="/board/tasks/\(visit.taskID)">#\(visit.taskID) \(visit.title)</a></td><td>\(site)</td><td>\(move)</td></tr>
                    """
            }
            let summary =
                route.visits.isEmpty
                ? "nothing planned" : "\(quantity(route.visits.count, "task")), \(Int(route.drivingMinutes)) min driving"
            return """
                <section class="route" data-person="\(route.personID)"><h2>\(route.name) <small>\(time(route.starts))–\(time(route.ends)): \(summary)</small></h2>\
                \(rows.isEmpty ? HTML.empty : "<table><tbody>\(rows)</tbody></table>")</section>
                """
        }
        let away: [HTML] = plan.away.map { "<li>\($0.name): \($0.why)</li>" }
        let left: [HTML] = plan.leftOut.map { task in
            "<li data-task=\"\(task.taskID)\"><a href=\"/board/tasks/\(task.taskID)\">#\(task.taskID) \(task.title)</a>: \(task.reason)\(task.keeps ? HTML.empty : " (back to the team)")</li>"
        }
        let fields: [HTML] = plan.assignments.map { a in
            let value =
                "\(a.taskID):\(a.version):\(a.assigneeID.map(String.init) ?? ""):\(a.plannedStart.map { String(Int64($0.timeIntervalSince1970)) } ?? "")"
            return "<input type=\"hidden\" name=\"a\" value=\"\(value)\">"
        }
        let back = "/board?" + FormFields.query([("day", plan.day.description), ("team", team.slug)])
        let again =
            "/board/plan?" + FormFields.query([("team", team.slug), ("day", plan.day.description)] + (replan ? [("from", "now")] : []))
        let accept: HTML =
            fields.isEmpty
            ? "<p>Nothing to plan: no open work that day.</p>"
            : """
            <form method="post" action="/board/plan"><input type="hidden" name="csrf" value="\(session.csrf)">\
            <input type="hidden" name="team" value="\(team.id)"><input type="hidden" name="day" value="\(plan.day.description)">\
            <input type="hidden" name="back" value="\(back)">\(fields)\
            <button type="submit" class="accept">Accept this plan (\(plan.changeSummary))</button></form>
            """
        return """
            <h1>Plan for \(team.name) on \(plan.day.description)\(replan ? " from now" : "")</h1>
            <div class="plan"><p class="summary">\(plan.changeSummary), <strong>\(plan.leftOut.count)</strong> left out; \
            nothing changes until you accept. Times in \(zone.name).</p>\(routes)\
            \(away.isEmpty ? HTML.empty : "<h2>Not working</h2><ul class=\"away\">\(away)</ul>")\
            \(left.isEmpty ? HTML.empty : "<h2>Left out</h2><ul class=\"left-out\">\(left)</ul>")\
            \(accept)<p><a href="\(again)">Plan again</a> · <a href="\(back)">Back to the board</a></p></div>
            """
    }
}
