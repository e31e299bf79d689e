import CentralStore
import Foundation
import HTMLText
import Hummingbird
import NIOCore
import ServerSupport
import TeamworkModel

extension BoardRoutes {
    /// The map's features for the chosen day and teams (the board's filters).
    func mapData(_ query: FormFields, now: Date) async throws -> (map: DispatchMap, view: DayView) {
        try await read { store in
            let view = try await DayView.scope(store, query: query, now: now)
            let map = try await DispatchMap.load(
                store,
                filter: .init(
                    teamIDs: view.chosen.map(\.id),
                    statuses: [.open, .assigned, .inProgress, .completed],
                    on: view.day), now: now)
            return (map, view)
        }
    }

    func mapPage(_ request: Request, _ session: BoardSession) async throws -> Response {
        let query = try query(request)
        let (map, view) = try await mapData(query, now: Date())
        return BoardPages.response(
            BoardPages.layout(
                title: "Map \(view.day)", session: session, current: "map", query: view.query,
                bodyData: [("page", "map"), ("feed", view.feed)], scripts: ["leaflet.js", "board.js", "map.js"],
                styles: ["leaflet.css"],
                main: BoardPages.map(map, view: view, configuration: configuration)
            ), configuration: configuration)
    }

    /// `GET /board/map.json?day=&team=`: what the live map redraws from (GeoJSON, as `map --geojson`).
    func mapJSON(_ request: Request, _ context: Context) async throws -> Response {
        guard try await session(request, context) != nil else { throw BoardProblem(.unauthorized, "sign in again") }
        let (map, _) = try await mapData(try query(request), now: Date())
        return Response(
            status: .ok, headers: [.contentType: "application/geo+json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: try map.encoded(pretty: false))))
    }

    func newTaskPage(_ request: Request, _ session: BoardSession, problem: BoardProblem?, form: FormFields?) async throws -> Response {
        let query = try query(request)
        let (teams, workers, sites, checklists) = try await read { store in
            (
                try await store.listTeams().map(\.team), try await store.listPeople(role: .worker, teamID: nil).filter(\.isActive),
                try await store.listLocations(kind: .site), try await store.checklists().map(\.name)
            )
        }
        return BoardPages.response(
            BoardPages.layout(
                title: "New task", session: session, current: "new", problem: problem?.message, bodyData: [("page", "new")],
                main: BoardPages.newTask(
                    teams: teams, workers: workers, sites: sites, checklists: checklists, session: session,
                    form: form ?? query,
                    back: "/board?"
                        + FormFields.query(query.pairs.filter { $0.name == "day" || $0.name == "team" }.map { ($0.name, $0.value) }))
            ), status: problem?.status ?? .ok, configuration: configuration)
    }
}

extension BoardPages {
    static func map(_ map: DispatchMap, view: DayView, configuration: BoardConfiguration) -> HTML {
        let data = (try? map.encoded(pretty: false)) ?? Data("{\"type\":\"FeatureCollection\",\"features\":[]}".utf8)
        let teamBoxes: [HTML] = view.teams.map { team in
            "<label><input type=\"checkbox\" name=\"team\" value=\"\(team.slug)\"\(view.chosen.contains { $0.id == team.id } ? HTML(" checked") : .empty)> \(team.name)</label>"
        }
        let workerOptions: [HTML] = map.features.filter { $0.properties.kind == "worker" }.map { worker in
            "<option value=\"\(worker.properties.personID ?? 0)\">\(worker.properties.name ?? worker.id)</option>"
        }
        let unplaced = map.features.filter { $0.geometry == nil }
        let unplacedItems: [HTML] = unplaced.map { feature in
            "<li>\(feature.properties.title ?? feature.properties.name ?? feature.id)</li>"
        }
        return """
            <h1>Map of \(view.day.description)</h1>
            <form class="filters" method="get" action="/board/map">
            <label>Day <input type="date" name="day" value="\(view.day.description)" required></label>
            <fieldset><legend>Teams (none ticked: all)</legend>\(teamBoxes)</fieldset>
            <button type="submit">Show</button>
            </form>
            <div class="legend" aria-label="Legend"><span class="dot open"></span> open <span class="dot assigned"></span> assigned \
            <span class="dot in_progress"></span> in progress <span class="dot completed"></span> completed <span class="dot late"></span> late \
            <span class="dot worker"></span> worker's last position</div>
            <div id="map" role="region" aria-label="Map of tasks and workers" data-tiles="\(configuration.tileURL)" \
            data-attribution="\(configuration.tileAttribution)" data-source="/board/map.json?\(view.query)"></div>
            <p><label for="map-worker">Show</label> <select id="map-worker"><option value="">every worker and task</option>\
            <option value="none">tasks nobody has yet</option>\(workerOptions)</select></p>
            <p id="map-status" role="status"></p>
            \(unplaced.isEmpty ? HTML.empty : "<section><h2>Not on the map (no site or no position)</h2><ul>\(unplacedItems)</ul></section>")
            <script type="application/json" id="map-data">\(HTML.scriptJSON(data))</script>
            """
    }

    static func newTask(
        teams: [Team], workers: [Person], sites: [Location], checklists: [String], session: BoardSession, form: FormFields, back: String
    ) -> HTML {
        func selected(_ name: String, _ value: String) -> HTML { form[name] == value ? " selected" : .empty }
        // The team the board showed (or the only one), unless the form came back with a choice: a new task
        // is the team's work by default, not a personal task.
        let team: String? = {
            if let given = form["team"], given.isEmpty || Int64(given) != nil { return given }
            let shown = teams.filter { form.all("team").contains($0.slug) }
            if shown.count == 1 { return String(shown[0].id) }
            return teams.count == 1 ? String(teams[0].id) : nil
        }()
        let teamOptions: [HTML] = teams.map {
            "<option value=\"\($0.id)\"\(team == String($0.id) ? HTML(" selected") : .empty)>\($0.name)</option>"
        }
        let checklistOptions: [HTML] = checklists.map { "<option value=\"\($0)\"\(selected("checklist", $0))>\($0)</option>" }
        let workerOptions: [HTML] = workers.map {
            "<option value=\"\($0.id)\"\(selected("assignee", String($0.id)))>\($0.displayName)</option>"
        }
        let siteOptions: [HTML] = sites.map { "<option value=\"\($0.id)\"\(selected("site", String($0.id)))>\(siteLine($0))</option>" }
        let priorities: [HTML] = Priority.allCases.reversed().map { priority in
            "<option value=\"\(priority.rawValue)\"\((form["priority"] ?? "normal") == priority.rawValue ? HTML(" selected") : .empty)>\(priority.rawValue)</option>"
        }
        return """
            <h1>New task</h1>
            <form class="stacked" method="post" action="/board/tasks">
            <input type="hidden" name="csrf" value="\(session.csrf)"><input type="hidden" name="back" value="\(back)">
            <label for="title">Title</label><input id="title" name="title" required maxlength="200" value="\(form["title"] ?? "")">
            <label for="description">Description</label><textarea id="description" name="description" rows="3">\(form["description"] ?? "")</textarea>
            <label for="team">Team</label><select id="team" name="team">\(teamOptions)<option value=""\(team == "" ? HTML(" selected") : .empty)>none (a personal task)</option></select>
            <label for="assignee">Assignee</label><select id="assignee" name="assignee"><option value="">nobody yet (free for the team)</option>\(workerOptions)</select>
            <label for="site">Site</label><select id="site" name="site"><option value="">none</option>\(siteOptions)</select>
            <label for="priority">Priority</label><select id="priority" name="priority">\(priorities)</select>
            <fieldset><legend>Window, on the site's (else the team's) clock</legend>
            <label>From <input type="datetime-local" name="start" value="\(form["start"] ?? "")"></label>
            <label>to <input type="datetime-local" name="end" value="\(form["end"] ?? "")"></label></fieldset>
            <label for="due">Due (end of that day)</label><input id="due" name="due" type="date" value="\(form["due"] ?? "")">
            <label for="checklist">Checklist</label><select id="checklist" name="checklist"><option value="">none</option>\(checklistOptions)</select>
            <label for="skills">Required skills (comma-separated)</label><input id="skills" name="skills" value="\(form["skills"] ?? "")">
            <label><input type="checkbox" name="force" value="1"> assign even without a required skill</label>
            <button type="submit">Create the task</button>
            </form>
            """
    }
}
