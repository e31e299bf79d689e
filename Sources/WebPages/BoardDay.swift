import CentralStore
import Foundation
import HTMLText
import Hummingbird
import ServerSupport
import TeamworkFormats
import TeamworkModel

/// One day of the chosen teams, as the board shows it: a column per worker and
/// one for the teams' tasks nobody has yet, cards in window order.
struct DayView: Sendable {
    struct Column: Sendable {
        /// Nil: "Unassigned".
        var person: Person?
        var tasks: [FieldTask]
        /// Their hours that day when set (`person hours`), or "off"; and why they are away, if they are.
        var hours: String? = nil
        var away: String? = nil
        /// Not working at all that day (a day off, or away all day): the column is shaded.
        var off = false
    }

    var day: LocalDate
    var teams: [Team]
    var chosen: [Team]
    /// The chosen teams' zone when they share one; cards in another zone say theirs.
    var zone: Zone
    var columns: [Column]
    var sites: [Int64: Location]
    var names: DisplayNames
    var now: Date
    /// The board's head (``CentralStore/boardHead()``) when this was read: the live board waits for changes after it.
    var feed: String
    /// Open conflicts per task: the cards that show a mark.
    var conflicts: [Int64: (count: Int, first: Int64)] = [:]
    /// Each card's appointment with its customer, if it has one: confirmed, asked to move, no answer.
    var appointments: [Int64: Appointment] = [:]

    var taskCount: Int { columns.reduce(0) { $0 + $1.tasks.count } }
    var late: Int { columns.reduce(0) { $0 + $1.tasks.filter { $0.isLate(at: now) }.count } }
    /// Cards whose worker cannot keep them all (``FieldTask/clash(_:_:minutes:)``): planned visits
    /// that overlap, or overlapping windows of work not yet planned.
    var doubleBooked: Set<Int64> {
        let byID = Dictionary(teams.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        return columns.reduce(into: Set<Int64>()) { booked, column in
            if column.person != nil {
                booked.formUnion(FieldTask.doubleBooked(column.tasks) { $0.minutesOnSite(team: $0.teamID.flatMap { byID[$0] }) })
            }
        }
    }
    /// Minutes late, all late cards together.
    var minutesLate: Int { columns.reduce(0) { $0 + $1.tasks.reduce(0) { $0 + $1.minutesLate(at: now) } } }
    var done: Int { columns.reduce(0) { $0 + $1.tasks.filter { $0.status == .completed }.count } }

    /// What narrows the cards: a search, statuses, priorities, a skill, late only.
    var filters = Filters()
    /// The holds on this day's customer messages (`customer hold`, or an import that holds its own).
    var holds: [MessageHold] = []

    struct Filters: Sendable {
        var search = ""
        var statuses: [TaskStatus] = []
        var priorities: [Priority] = []
        var skill = ""
        var lateOnly = false

        init() {}

        init(_ query: FormFields) throws {
            search = (query["q"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            guard search.count <= TaskFilter.maximumSearchLength else {
                throw BoardProblem(.unprocessableContent, "a search has at most \(TaskFilter.maximumSearchLength) characters")
            }
            statuses = try query.all("status").filter { !$0.isEmpty }.map {
                guard let status = TaskStatus(rawValue: $0) else { throw BoardProblem(.unprocessableContent, "no status '\($0)'") }
                return status
            }
            priorities = try query.all("priority").filter { !$0.isEmpty }.map {
                guard let priority = Priority(rawValue: $0) else { throw BoardProblem(.unprocessableContent, "no priority '\($0)'") }
                return priority
            }
            skill = (query["skill"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
            guard skill.count <= 100 else { throw BoardProblem(.unprocessableContent, "a skill has at most 100 characters") }
            lateOnly = query["late"] == "1"
        }

        var fields: [(String, String)] {
            (search.isEmpty ? [] : [("q", search)]) + statuses.map { ("status", $0.rawValue) }
                + priorities.map { ("priority", $0.rawValue) } + (skill.isEmpty ? [] : [("skill", skill)])
                + (lateOnly ? [("late", "1")] : [])
        }

        var isEmpty: Bool { fields.isEmpty }
    }

    /// The query that shows this view again (`day=…&team=…` and the filters).
    var query: String {
        FormFields.query([("day", day.description)] + chosen.map { ("team", $0.slug) } + filters.fields)
    }

    /// What the board's filters choose (the day, the teams, their zone), with the feed's position
    /// read first: a change made while the rest is read is then seen again, never missed.
    static func scope(_ store: any BoardReads, query: FormFields, now: Date) async throws -> DayView {
        let feed = try await store.boardHead()
        let teams = try await store.listTeams().map(\.team)
        let wanted = query.all("team").filter { !$0.isEmpty }
        let chosen = teams.filter { wanted.contains($0.slug) }
        if let unknown = wanted.first(where: { slug in !teams.contains { $0.slug == slug } }) {
            throw BoardProblem(.notFound, "no team '\(unknown)'")
        }
        let zones = Set((chosen.isEmpty ? teams : chosen).map(\.timeZone))
        let zone = zones.count == 1 ? Zone.reading(zones.first!) : .utc
        let day = try query["day"].flatMap { $0.isEmpty ? nil : $0 }.map { try LocalDate(parsing: $0, field: "day") } ?? zone.date(of: now)
        return DayView(
            day: day, teams: teams, chosen: chosen, zone: zone, columns: [], sites: [:], names: DisplayNames(),
            now: now, feed: feed)
    }

    static func load(_ store: any BoardReads, query: FormFields, now: Date) async throws -> DayView {
        let view = try await scope(store, query: query, now: now)
        let (teams, chosen, day) = (view.teams, view.chosen, view.day)
        let scope = Set(chosen.map(\.id))
        let teamsOf = try await store.teamIDsByPerson()
        let filters = try Filters(query)
        let shown: [TaskStatus] = [.open, .assigned, .inProgress, .completed]
        let tasks = try await store.listTasks(
            TaskFilter(
                statuses: filters.statuses.isEmpty ? shown : filters.statuses.filter(shown.contains), priorities: filters.priorities,
                on: day, search: filters.search.isEmpty ? nil : filters.search, skill: filters.skill.isEmpty ? nil : filters.skill)
        )
        .filter { DispatchMap.inScope($0, teams: scope, teamsOf: teamsOf) && (!filters.lateOnly || $0.isLate(at: now)) }
        let people = try await store.listPeople(role: nil, teamID: nil)
        let byID = Dictionary(uniqueKeysWithValues: people.map { ($0.id, $0) })
        var names = DisplayNames()
        for team in teams { names.teams[team.id] = team.slug }
        for person in people { names.people[person.id] = person.displayName }
        // Every active worker of the chosen teams has a column, with work or without; so has anyone given a task here.
        var crew = people.filter { person in
            person.role == .worker && person.isActive
                && (teamsOf[person.id] ?? []).contains { scope.isEmpty || scope.contains($0) }
        }
        for id in Set(tasks.compactMap(\.assigneeID)) where !crew.contains(where: { $0.id == id }) {
            if let person = byID[id] { crew.append(person) }
        }
        var columns = [Column(person: nil, tasks: tasks.filter { $0.assigneeID == nil })]
        let times = try await store.workTimes(personIDs: crew.map(\.id), day: day, zone: view.zone)
        for person in crew {
            // A worker's cards in the order the day plan gave them (its expected starts), the rest by window.
            let theirs = tasks.filter { $0.assigneeID == person.id }.enumerated().sorted { a, b in
                switch (a.element.plannedStart, b.element.plannedStart) {
                case (let x?, let y?): x < y
                default: a.offset < b.offset
                }
            }.map(\.element)
            var column = Column(person: person, tasks: theirs)
            if let time = times[person.id] {
                let working = WorkingDay(
                    day: day, zone: view.zone, week: time.week, exception: time.exception, absences: time.absences, otherwise: .allDay)
                let set: DayHours?? = time.exception ?? (time.week.isEmpty ? nil : .some(time.week.days[day.weekday]))
                column.hours = set.map { $0?.description ?? "off" }
                column.away = working.away.map { reason in
                    let until = time.absences.map(\.endsAt).max().map { view.zone.format($0, withZone: false) } ?? ""
                    return "away (\(reason.rawValue)) until \(until)"
                }
                column.off = working.at == nil
            }
            columns.append(column)
        }
        let sites = Dictionary(
            uniqueKeysWithValues: try await store.locations(ids: Array(Set(tasks.compactMap(\.locationID)))).map { ($0.id, $0) })
        return DayView(
            day: day, teams: teams, chosen: chosen, zone: view.zone, columns: columns, sites: sites, names: names,
            now: now, feed: view.feed, conflicts: try await store.openConflictsByTask(),
            appointments: try await store.appointments(taskIDs: tasks.map(\.id)), filters: filters,
            holds: try await store.messageHolds().filter { $0.day == day })
    }
}

extension BoardRoutes {
    func boardPage(_ request: Request, _ session: BoardSession) async throws -> Response {
        let query = try query(request)
        let now = Date()
        let view = try await read { try await DayView.load($0, query: query, now: now) }
        if query["part"] == "live" {
            return BoardPages.response(BoardPages.live(view, session: session), configuration: configuration)
        }
        let flash = self.flash(request)
        return BoardPages.response(
            BoardPages.layout(
                title: "Day board \(view.day)", session: session, current: "board", query: view.query, flash: flash,
                bodyData: [("page", "board"), ("feed", view.feed)], main: BoardPages.day(view, session: session)
            ), configuration: configuration)
    }
}

extension BoardRoutes {
    /// `GET /board/day.csv?day=…&team=…`: the day the board shows, one row per task, by worker, for a
    /// spreadsheet (times on each task's own clock, named in its own column).
    func dayCSV(_ request: Request, _ context: Context) async throws -> Response {
        guard try await session(request, context) != nil else { return redirect(to: "/board/sign-in") }
        let query = try query(request)
        let now = Date()
        let view = try await read { try await DayView.load($0, query: query, now: now) }
        var rows = [
            [
                "worker", "task", "title", "start", "end", "due", "time_zone", "site", "priority", "status", "team",
                "minutes_late", "eta", "started", "completed", "completed_by", "note",
            ]
        ]
        for column in view.columns {
            for task in column.tasks {
                let zone = task.zone
                func local(_ date: Date?) -> String { date.map { "\(zone.date(of: $0)) \(BoardPages.clock(zone.time(of: $0)))" } ?? "" }
                rows.append([
                    column.person?.displayName ?? "Unassigned", String(task.id), task.title, local(task.window?.start),
                    local(task.window?.end), local(task.dueAt), zone.name,
                    BoardPages.siteLine(task.locationID.flatMap { view.sites[$0] }), task.priority.rawValue,
                    BoardPages.label(task.status), task.teamID.flatMap { view.names.teams[$0] } ?? "",
                    String(task.minutesLate(at: now)), local(task.expectedArrival(at: now)?.at), local(task.startedAt),
                    local(task.completedAt), task.completedBy.map { view.names.people[$0] ?? "person \($0)" } ?? "",
                    task.completionNote ?? "",
                ])
            }
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: "text/csv; charset=utf-8", .cacheControl: "no-store",
                .contentDisposition: "attachment; filename=\"teamwork-\(view.day).csv\"",
            ],
            body: .init(byteBuffer: ByteBuffer(string: CSVTable.render(rows))))
    }
}

extension BoardPages {
    /// A line per hold on the day's customer messages, with the button that sends them.
    static func held(_ view: DayView, session: BoardSession) -> HTML {
        let lines: [HTML] = view.holds.map { hold in
            let team = hold.teamID.map { id in view.teams.first { $0.id == id }?.name ?? "team \(id)" }
            return """
                <form class="held" method="post" action="/board/messages/release"><input type="hidden" name="csrf" value="\(session.csrf)">\
                <input type="hidden" name="day" value="\(hold.day.description)"><input type="hidden" name="team" value="\(hold.teamID.map(String.init) ?? "")">\
                <input type="hidden" name="back" value="/board?\(view.query)">\
                <p>Customers' messages about \(hold.day.description)\(team.map { " (\($0))" } ?? "") are held: \(quantity(hold.held, "message")) waiting\
                \(hold.note.isEmpty ? HTML.empty : " — \(hold.note)"). <button type="submit">Release them</button></p></form>
                """
        }
        return lines.isEmpty ? .empty : "\(lines)"
    }

    static func day(_ view: DayView, session: BoardSession) -> HTML {
        let kept = view.chosen.map { ("team", $0.slug) } + view.filters.fields
        let previous = FormFields.query([("day", view.day.adding(days: -1).description)] + kept)
        let next = FormFields.query([("day", view.day.adding(days: 1).description)] + kept)
        let today = FormFields.query(kept)
        let statusBoxes: [HTML] = [TaskStatus.open, .assigned, .inProgress, .completed].map { status in
            """
            <label><input type="checkbox" name="status" value="\(status.rawValue)"\(view.filters.statuses.contains(status) ? HTML(" checked") : .empty)> \(label(status))</label>
            """
        }
        let priorityBoxes: [HTML] = Priority.allCases.reversed().map { priority in
            """
            <label><input type="checkbox" name="priority" value="\(priority.rawValue)"\(view.filters.priorities.contains(priority) ? HTML(" checked") : .empty)> \(priority.rawValue)</label>
            """
        }
        let teamBoxes: [HTML] = view.teams.map { team in
            """
            <label><input type="checkbox" name="team" value="\(team.slug)"\(view.chosen.contains { $0.id == team.id } ? HTML(" checked") : .empty)> \(team.name)</label>
            """
        }
        return """
            <h1>Day board</h1>
            <form class="filters" method="get" action="/board">
            <label>Day <input type="date" name="day" value="\(view.day.description)" required></label>
            <details class="filter-fold"\(view.filters.isEmpty && view.chosen.isEmpty ? HTML.empty : " open")><summary>Filters\(view.filters.isEmpty && view.chosen.isEmpty ? HTML.empty : " (set)")</summary><div class="filter-fields">
            <fieldset><legend>Teams (none ticked: all)</legend>\(teamBoxes)</fieldset>
            <label>Search <input type="search" name="q" value="\(view.filters.search)" maxlength="200" placeholder="title, site, address, person, id"></label>
            <fieldset><legend>Status</legend>\(statusBoxes)</fieldset>
            <fieldset><legend>Priority</legend>\(priorityBoxes)</fieldset>
            <label>Skill <input name="skill" value="\(view.filters.skill)" maxlength="100" size="10"></label>
            <label><input type="checkbox" name="late" value="1"\(view.filters.lateOnly ? HTML(" checked") : .empty)> late only</label>
            </div></details>
            <button type="submit">Show</button>\(view.filters.isEmpty ? HTML.empty : " <a href=\"/board?\(FormFields.query([("day", view.day.description)] + view.chosen.map { ("team", $0.slug) }))\">Clear the filters</a>")
            <a href="/board?\(previous)" rel="prev">Previous day</a> <a href="/board?\(today)">Today</a> <a href="/board?\(next)" rel="next">Next day</a>
            </form>
            \(planButton(view))\(held(view, session: session))
            <div id="live">\(live(view, session: session))</div>
            """
    }

    /// The part of the board a live refresh replaces: the summary and the columns.
    static func live(_ view: DayView, session: BoardSession) -> HTML {
        let back = "/board?" + view.query
        // On paper each column is a page of its own: each says its day.
        let printedDay = "\(view.day.weekdayName) \(view.day)"
        let booked = view.doubleBooked
        let columns: [HTML] = view.columns.enumerated().map { index, column in
            let heading: HTML
            let target: HTML
            if let person = column.person {
                let skills = person.skills.isEmpty ? "" : person.skills.joined(separator: ", ")
                let skillLine: HTML = skills.isEmpty ? .empty : "<p class=\"skills\">\(skills)</p>"
                let hours: HTML = column.hours.map { "<p class=\"hours\">hours \($0)</p>" } ?? .empty
                let away: HTML = column.away.map { "<p class=\"away\">\($0)</p>" } ?? .empty
                heading =
                    "<h2 id=\"column-\(index)\">\(person.displayName) <span class=\"count\">\(column.tasks.count)</span></h2>\(skillLine)\(hours)\(away)"
                target = column.off ? " data-person=\"\(person.id)\" data-off=\"1\"" : " data-person=\"\(person.id)\""
            } else {
                heading = "<h2 id=\"column-\(index)\">Unassigned <span class=\"count\">\(column.tasks.count)</span></h2>"
                target = " data-unassigned=\"1\""
            }
            let cards: [HTML] = column.tasks.map { card($0, view: view, back: back, doubleBooked: booked.contains($0.id)) }
            return """
                <section class="column\(column.off ? " off" : "")\(column.tasks.isEmpty ? " empty" : "")" data-index="\(index)" aria-labelledby="column-\(index)"\(target)>\(heading)<p class="print-only">\(printedDay)</p><ol class="cards">\(cards)</ol></section>
                """
        }
        let zoneNote =
            view.chosen.isEmpty && Set(view.teams.map(\.timeZone)).count > 1
            ? "each card in its task's own time zone"
            : "times in \(view.zone.name) (\(view.zone.abbreviation(at: view.zone.day(view.day).start)))"
        let teamFields: [HTML] = view.chosen.map { "<input type=\"hidden\" name=\"team\" value=\"\($0.id)\">" }
        return """
            <p class="summary" data-feed="\(view.feed)"><strong>\(view.taskCount)</strong> \(view.taskCount == 1 ? "task" : "tasks") on \(view.day.description), \
            <strong>\(view.late)</strong> late\(view.late > 0 ? HTML(" (\(BoardPages.duration(minutes: view.minutesLate)) in all)") : .empty), \
            <strong>\(view.done)</strong> completed; \(zoneNote). <a class="export" href="/board/day.csv?\(view.query)" download>The day as CSV</a></p>
            <p class="agenda-pick"><label for="agenda">Show</label> <select id="agenda"><option value="">Everyone</option>\
            \(view.columns.enumerated().map { index, column in "<option value=\"\(index)\">\(column.person?.displayName ?? "Unassigned") (\(column.tasks.count))</option>" as HTML })\
            </select></p>
            <div class="columns" data-back="\(back)">\(teamFields)\(columns)</div>
            """
    }

    /// What the customer answered: `confirmed`, `asked to move to Tue 2 Dec 10:00–12:00`, `no answer`;
    /// or, when no message can reach them, why they were not told (`not told: no consent`).
    static func appointmentMark(_ appointment: Appointment, zone: Zone) -> HTML {
        let kind = appointment.answer == .none && appointment.notTold != nil ? "not-told" : appointment.answer.rawValue
        return "<p class=\"appointment answer-\(kind)\">customer: \(appointment.words(in: zone))</p>"
    }

    static func card(_ task: FieldTask, view: DayView, back: String, doubleBooked: Bool = false) -> HTML {
        let zone = task.zone
        let otherZone = zone.name != view.zone.name || (view.chosen.isEmpty && Set(view.teams.map(\.timeZone)).count > 1)
        let time: HTML
        if let window = task.window {
            let text =
                clock(zone.time(of: window.start)) + "–" + clock(zone.time(of: window.end))
                + (otherZone ? " " + zone.abbreviation(at: window.start) : "")
            time = "<time datetime=\"\(ISODate.format(window.start))\">\(text)</time>"
        } else if let due = task.dueAt {
            time =
                "<time datetime=\"\(ISODate.format(due))\">due \(clock(zone.time(of: due)))\(otherZone ? " " + zone.abbreviation(at: due) : "")</time>"
        } else {
            time = .empty
        }
        let late = task.isLate(at: view.now)
        let eta: HTML =
            task.expectedArrival(at: view.now).map { arrival in
                let text = "ETA " + clock(zone.time(of: arrival.at)) + (otherZone ? " " + zone.abbreviation(at: arrival.at) : "")
                return arrival.runningLate
                    ? " <strong class=\"running-late\"><time class=\"eta\" datetime=\"\(ISODate.format(arrival.at))\">\(text)</time>: running late</strong>"
                    : " <time class=\"eta\" datetime=\"\(ISODate.format(arrival.at))\">\(text)</time>"
            } ?? .empty
        let site = siteLine(task.locationID.flatMap { view.sites[$0] })
        let team = task.teamID.flatMap { view.names.teams[$0] }
        let skills = task.requiredSkills.isEmpty ? "" : "needs " + task.requiredSkills.joined(separator: ", ")
        let classes = "card status-\(task.status.rawValue) priority-\(task.priority.rawValue)" + (late ? " late" : "")
        return """
            <li><article class="\(classes)" id="task-\(task.id)" data-task="\(task.id)" data-version="\(task.version)" draggable="true">\
            <h3><a href="/board/tasks/\(task.id)?back=\(FormFields.encode(back))">\(task.title)</a></h3>\
            <p class="when">\(time)\(eta)\(late ? HTML(" <strong class=\"late-flag\">late \(duration(minutes: task.minutesLate(at: view.now)))</strong>") : .empty)\
            \(doubleBooked ? HTML(" <strong class=\"double-flag\" title=\"they cannot keep this and another of their tasks: the visits or windows overlap\">double-booked</strong>") : .empty)</p>\
            \(site.isEmpty ? HTML.empty : "<p class=\"site\">\(site)</p>")\
            \(view.conflicts[task.id].map { conflictMark(first: $0.first, count: $0.count) } ?? .empty)\
            \(view.appointments[task.id].map { appointmentMark($0, zone: zone) } ?? .empty)\
            <p class="meta"><span class="priority">\(task.priority.rawValue)</span> · <span class="status">\(label(task.status))</span>\
            \(team.map { " · \($0)" as HTML } ?? .empty)\(skills.isEmpty ? HTML.empty : " · <span class=\"skills\">\(skills)</span>")</p>\
            </article></li>
            """
    }
}
