import DayPlanner
import Foundation
import PostgresNIO
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// A dispatcher's morning with the built `teamwork-manager`: skills, windows,
/// suggestions, the map as GeoJSON and as a page in a real browser.
@Suite("teamwork-manager dispatch")
struct DispatchCLITests {
    struct World {
        var tool: ManagerTool
        var url: DatabaseURL
        var ids: [String: Int64] = [:]
    }

    /// Red: Ann (electrical, 1 km north of the site), Bo (electrical, climbing; 3 km north),
    /// Dan (no skills, never checked in). Blue: Cy. A site in Stockholm.
    static func world(_ url: DatabaseURL) async throws -> World {
        let tool = ManagerTool(url)
        var world = World(tool: tool, url: url)
        func ok(_ run: ManagerTool.Run) throws -> ManagerTool.Run {
            #expect(run.status == 0, "\(run.stderr)")
            return run
        }
        _ = try await ok(tool("person", "add", "--first", "Max", "--last", "Boss", "--email", "max@example.org", "--role", "manager"))
        for (first, skills) in [("Ann", "electrical"), ("Bo", "Climbing, electrical"), ("Dan", ""), ("Cy", "")] {
            let person = try await JSONOutput.decode(
                Person.self,
                try ok(
                    tool(
                        "person", "add", "--first", first, "--last", "Field", "--email", "\(first.lowercased())@example.org",
                        "--skills", skills, "--json"
                    )
                ).stdout)
            world.ids[first] = person.id
        }
        _ = try await ok(tool("team", "add", "red", "--name", "Red"))
        _ = try await ok(tool("team", "add", "blue", "--name", "Blue"))
        for first in ["ann", "bo", "dan"] { _ = try await ok(tool("team", "add-member", "red", "\(first)@example.org")) }
        _ = try await ok(tool("team", "add-member", "blue", "cy@example.org"))
        let site = try await JSONOutput.decode(
            Location.self,
            try ok(
                tool(
                    "location", "add", "--name", "Substation 7", "--lat", "59.33", "--lon", "18.06", "--street", "Kungsgatan 1",
                    "--city", "Stockholm", "--country", "SE", "--json"
                )
            ).stdout)
        world.ids["site"] = site.id
        try await CentralStore.withStore(url) { store in
            for (first, lat) in [("Ann", 59.339), ("Bo", 59.357), ("Cy", 59.40)] {
                try await store.connection.query(
                    """
                    INSERT INTO locations (kind, person_id, latitude, longitude, updated_at)
                    VALUES ('person', \(world.ids[first]!), \(lat), 18.06, now() - interval '20 minutes')
                    """,
                    logger: store.logger
                )
            }
        }
        return world
    }

    @Test func assigningWithoutARequiredSkillIsRefusedInOneLineAndForceIsRecorded() async throws {
        try await TestDatabase.withFresh { url in
            let w = try await Self.world(url)
            let created = try JSONOutput.decode(
                FieldTask.self,
                try await w.tool(
                    "task", "create", "--title", "Climb pole 12", "--team", "red", "--requires", "climbing,electrical",
                    "--location", String(w.ids["site"]!), "--json"
                ).stdout)
            #expect(created.requiredSkills == ["climbing", "electrical"])
            let refused = try await w.tool(
                "task", "assign", String(created.id), "--team", "red", "--assignee", "ann@example.org",
                "--actor", "max@example.org")
            #expect(refused.status == 68)
            #expect(refused.errorLines.count == 1)
            #expect(refused.stderr.contains("needs climbing which Ann Field does not have"), "\(refused.stderr)")
            let forced = try await w.tool(
                "task", "assign", String(created.id), "--team", "red", "--assignee", "ann@example.org",
                "--force", "--actor", "max@example.org")
            #expect(forced.status == 0, "\(forced.stderr)")
            let history = try await w.tool("task", "history", String(created.id))
            #expect(history.stdout.contains("forced") && history.stdout.contains("assigned without climbing"), "\(history.stdout)")
            // A bad skill list is refused before anything is written.
            let bad = try await w.tool("task", "create", "--title", "x", "--team", "red", "--requires", "high voltage")
            #expect(bad.status == 65 && bad.errorLines.count == 1)
            #expect(try JSONOutput.decode([FieldTask].self, try await w.tool("task", "list", "--json").stdout).count == 1)
        }
    }

    /// The day plan (a preview): every open task of the day goes to someone who has its skills and
    /// can start it within its window and their hours, started work stays put, and what cannot be
    /// planned says why; nothing changes on the master.
    @Test func theDayPlanKeepsSkillsWindowsHoursAndStartedWorkAndSaysWhyATaskIsLeftOut() async throws {
        try await TestDatabase.withFresh { url in
            let w = try await Self.world(url)
            let day = "2026-12-01"
            func create(_ title: String, _ extra: [String]) async throws -> FieldTask {
                try JSONOutput.decode(
                    FieldTask.self,
                    try await w.tool.run(
                        ["task", "create", "--title", title, "--team", "red", "--location", String(w.ids["site"]!), "--json"] + extra
                    ).stdout)
            }
            let pole = try await create("Climb pole 12", ["--requires", "climbing", "--window", "\(day)T09:00/PT2H"])
            var others: [FieldTask] = []
            for hour in ["08", "10", "11", "13", "14"] {
                others.append(try await create("Read meter \(hour)", ["--window", "\(day)T\(hour):00/PT2H"]))
            }
            let diving = try await create("Inspect the culvert", ["--requires", "diving", "--window", "\(day)T10:00/PT2H"])
            let started = try await create("Fix the feeder", ["--assignee", "dan@example.org", "--window", "\(day)T08:00/PT4H"])
            try await CentralStore.withStore(url) { store in
                try await store.connection.query(
                    "UPDATE tasks SET status = 'in_progress', started_at = now() WHERE id = \(started.id)", logger: store.logger)
            }
            let before = try await w.tool("task", "list", "--json").stdout
            let run = try await w.tool("day", "plan", "--team", "red", "--on", day, "--json", "--seconds", "0.3")
            #expect(run.status == 0, "\(run.stderr)")
            let plan = try JSONOutput.decode(DayPlan.self, run.stdout)
            let visits = plan.routes.flatMap { route in route.visits.map { (route.personID, $0) } }
            let tasks = [pole, started, diving] + others
            #expect(Set(visits.map(\.1.taskID)) == Set(tasks.map(\.id)).subtracting([diving.id]))
            #expect(visits.first { $0.1.taskID == pole.id }?.0 == w.ids["Bo"], "only Bo climbs")
            #expect(visits.first { $0.1.taskID == started.id }?.0 == w.ids["Dan"], "started work stays with Dan")
            #expect(plan.leftOut.map(\.taskID) == [diving.id])
            #expect(plan.leftOut.first?.reason == "no one on the team has diving")
            let zone = try Zone("UTC")
            for (_, visit) in visits {
                let task = try #require(tasks.first { $0.id == visit.taskID })
                let window = try #require(task.window)
                #expect(visit.starts >= window.start && visit.starts <= window.end, "\(visit.title) starts within its window")
                #expect(visit.ends.timeIntervalSince(visit.starts) == 45 * 60, "the team's minutes on site")
                #expect(zone.time(of: visit.starts) >= LocalTime(hour: 7, minute: 0)!)
                #expect(visit.arrives <= visit.starts)
            }
            for route in plan.routes {
                for (a, b) in zip(route.visits, route.visits.dropFirst()) { #expect(a.ends <= b.arrives, "\(route.name) in order") }
            }
            #expect(try await w.tool("task", "list", "--json").stdout == before, "a preview changes nothing")
            let text = try await w.tool("day", "plan", "--team", "red", "--on", day, "--seconds", "0.2")
            #expect(text.stdout.firstMatch(of: /\d\d:\d\d:\d\d/) == nil, "times in minutes: \(text.stdout)")
            #expect(
                text.stdout.contains("Bo Field (07:00–16:00): ")
                    && text.stdout.contains("#\(diving.id) Inspect the culvert: no one on the team has diving"), "\(text.stdout)")
            let bad = try await w.tool("day", "plan", "--team", "red", "--hours", "16:00-07:00")
            #expect(bad.status == 64 && bad.errorLines.count == 1, "\(bad.stderr)")
        }
    }

    @Test func suggestExplainsItsRankingAndAssignSuggestedTakesTheFirst() async throws {
        try await TestDatabase.withFresh { url in
            let w = try await Self.world(url)
            let task = try JSONOutput.decode(
                FieldTask.self,
                try await w.tool(
                    "task", "create", "--title", "Replace breaker", "--team", "red", "--requires", "electrical",
                    "--location", String(w.ids["site"]!), "--json"
                ).stdout)
            let people = try await w.tool("person", "list")
            #expect(people.stdout.contains("SKILLS") && people.stdout.contains("climbing, electrical"), "\(people.stdout)")
            let table = try await w.tool("suggest", String(task.id))
            #expect(table.status == 0, "\(table.stderr)")
            #expect(table.stdout.contains("1.0 km away (position 20 min old), 0 open tasks, has electrical"), "\(table.stdout)")
            #expect(table.stdout.contains("Left out: Dan Field lacks electrical"))
            let ranking = try JSONOutput.decode(Ranking.self, try await w.tool("suggest", String(task.id), "--json").stdout)
            #expect(ranking.candidates.map(\.personID) == [w.ids["Ann"]!, w.ids["Bo"]!])

            let assigned = try await w.tool("task", "assign", String(task.id), "--suggested", "--actor", "max@example.org")
            #expect(assigned.status == 0, "\(assigned.stderr)")
            #expect(assigned.stdout.contains("to Ann Field (red): 1.0 km away"), "\(assigned.stdout)")
            let second = try JSONOutput.decode(
                FieldTask.self,
                try await w.tool(
                    "task", "create", "--title", "Second breaker", "--team", "red", "--requires", "electrical",
                    "--location", String(w.ids["site"]!), "--json"
                ).stdout)
            // Ann now holds one task (5 km of load at 1 km): Bo, 3 km away with none, goes.
            let next = try await w.tool("task", "assign", String(second.id), "--suggested", "--json")
            #expect(try JSONOutput.decode(FieldTask.self, next.stdout).assigneeID == w.ids["Bo"]!)
            let nobody = try JSONOutput.decode(
                FieldTask.self,
                try await w.tool(
                    "task", "create", "--title", "Weld", "--team", "red", "--requires", "welding", "--json"
                ).stdout)
            let none = try await w.tool("task", "assign", String(nobody.id), "--suggested")
            #expect(none.status == 68 && none.stderr.contains("nobody can take task \(nobody.id)"), "\(none.stderr)")
        }
    }

    @Test func aDaysWorkIsListedInWindowOrderAndAPastWindowIsFlagged() async throws {
        try await TestDatabase.withFresh { url in
            let w = try await Self.world(url)
            for (title, window) in [
                ("late", "2026-12-01T13:00Z/PT2H"), ("early", "2026-12-01T08:00Z/2026-12-01T10:00Z"),
                ("other day", "2026-12-02T08:00Z/PT1H"), ("gone", "2020-01-01T08:00Z/PT1H"),
            ] {
                let run = try await w.tool("task", "create", "--title", title, "--team", "red", "--window", window)
                #expect(run.status == 0, "\(run.stderr)")
            }
            let day = try JSONOutput.decode([FieldTask].self, try await w.tool("task", "list", "--on", "2026-12-01", "--json").stdout)
            #expect(day.map(\.title) == ["early", "late"])
            let table = try await w.tool("task", "list")
            #expect(table.stdout.contains("WINDOW") && table.stdout.contains("2026-12-01 08:00-10:00"))
            #expect(table.stdout.split(separator: "\n").contains { $0.contains("gone") && $0.contains(" !") })
            let bad = try await w.tool("task", "create", "--title", "x", "--team", "red", "--window", "2026-12-01T10:00Z/2026-12-01T09:00Z")
            #expect(bad.status == 65 && bad.stderr.contains("the start must be before the end"))
        }
    }

    // MARK: The map

    static func features(_ run: ManagerTool.Run) throws -> [[String: Any]] {
        #expect(run.status == 0, "\(run.stderr)")
        let root = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(root["type"] as? String == "FeatureCollection")
        return try #require(root["features"] as? [[String: Any]])
    }

    /// RFC 7946: a Feature has a type, a geometry that is a Point with [lon, lat]
    /// in range or null, and a properties object.
    static func checkRFC7946(_ feature: [String: Any]) throws {
        #expect(feature["type"] as? String == "Feature")
        #expect(feature["properties"] is [String: Any])
        #expect(feature.keys.contains("geometry"), "geometry must be present, null when unlocated")
        if let geometry = feature["geometry"] as? [String: Any] {
            #expect(geometry["type"] as? String == "Point")
            let coordinates = try #require(geometry["coordinates"] as? [Double])
            #expect(coordinates.count == 2)
            #expect((-180...180).contains(coordinates[0]) && (-90...90).contains(coordinates[1]))
        } else {
            #expect(feature["geometry"] is NSNull)
        }
    }

    @Test func theMapIsRFC7946GeoJSONWithLongitudeFirstForTasksAndWorkersWithAndWithoutPlaces() async throws {
        try await TestDatabase.withFresh { url in
            let w = try await Self.world(url)
            let site = String(w.ids["site"]!)
            #expect(
                try await w.tool(
                    "task", "create", "--title", "At the site", "--team", "red", "--assignee", "ann@example.org",
                    "--location", site, "--window", "2026-12-01T09:00Z/PT3H"
                ).status == 0)
            #expect(try await w.tool("task", "create", "--title", "Nowhere", "--team", "blue").status == 0)
            #expect(try await w.tool("task", "create", "--title", "Cancelled one", "--team", "red").status == 0)
            #expect(try await w.tool("task", "cancel", "3").status == 0)

            let all = try Self.features(try await w.tool("map", "--geojson"))
            for feature in all { try Self.checkRFC7946(feature) }
            func find(_ id: String) throws -> [String: Any] { try #require(all.first { $0["id"] as? String == id }) }
            let atSite = try find("task-1")
            let point = try #require((atSite["geometry"] as? [String: Any])?["coordinates"] as? [Double])
            #expect(point == [18.06, 59.33], "longitude first")
            let properties = try #require(atSite["properties"] as? [String: Any])
            #expect(properties["kind"] as? String == "task" && properties["status"] as? String == "assigned")
            #expect(properties["team"] as? String == "red" && properties["assignee"] as? String == "Ann Field")
            #expect(properties["window_start"] as? String == "2026-12-01T09:00:00Z")
            #expect(try find("task-2")["geometry"] is NSNull, "a task without a site has no geometry")
            #expect(!all.contains { $0["id"] as? String == "task-3" }, "cancelled tasks only when asked")
            let ann = try find("worker-\(w.ids["Ann"]!)")
            #expect((ann["geometry"] as? [String: Any])?["coordinates"] as? [Double] == [18.06, 59.339])
            let annProperties = try #require(ann["properties"] as? [String: Any])
            #expect(annProperties["teams"] as? [String] == ["red"] && annProperties["open_tasks"] as? Int == 1)
            #expect((20...21).contains(annProperties["age_minutes"] as? Int ?? -1))
            #expect(try find("worker-\(w.ids["Dan"]!)")["geometry"] is NSNull, "never checked in")
            #expect(!all.contains { $0["id"] as? String == "worker-1" }, "managers are not workers on the map")

            let blue = try Self.features(try await w.tool("map", "--geojson", "--team", "blue"))
            #expect(Set(blue.compactMap { $0["id"] as? String }) == ["task-2", "worker-\(w.ids["Cy"]!)"])
            let cancelled = try Self.features(try await w.tool("map", "--geojson", "--status", "cancelled"))
            #expect(cancelled.filter { ($0["properties"] as? [String: Any])?["kind"] as? String == "task" }.count == 1)
            let usage = try await w.tool("map")
            #expect(usage.status == 64)
        }
    }

    @Test func theMapPageLoadsInHeadlessChromiumWithOneMarkerPerPlacedFeatureAndNoErrors() async throws {
        try await TestDatabase.withFresh { url in
            let w = try await Self.world(url)
            let site = String(w.ids["site"]!)
            for (title, team) in [
                ("One", "red"), ("Two", "red"), ("</script><script>document.body.dataset.error='injected'</script>", "blue"),
            ] {
                #expect(try await w.tool("task", "create", "--title", title, "--team", team, "--location", site).status == 0)
            }
            #expect(try await w.tool("task", "create", "--title", "No site", "--team", "red").status == 0)
            let folder = FileManager.default.temporaryDirectory.appending(path: "map-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let page = folder.appending(path: "map.html")
            let written = try await w.tool("map", "--html", page.path)
            #expect(written.status == 0, "\(written.stderr)")
            #expect(written.stderr.contains("6 on the map"), "3 tasks at the site and 3 workers with positions: \(written.stderr)")
            let html = try String(contentsOf: page, encoding: .utf8)
            for remote in ["src=", "href=\"http", "url(", "@import"] {
                #expect(!html.contains(remote), "nothing is fetched from elsewhere: \(remote)")
            }

            let (dom, log) = try await Chromium.dumpDOM(of: page)
            #expect(dom.contains("data-ready=\"1\""), "the page's script ran to the end")
            #expect(!dom.contains("data-error"), "no script error: \(log.suffix(400))")
            #expect(dom.contains("data-markers=\"6\""))
            #expect(dom.components(separatedBy: "class=\"marker task\"").count - 1 == 3)
            #expect(dom.components(separatedBy: "class=\"marker worker\"").count - 1 == 3)
            #expect(dom.contains("No site (no site)") && dom.contains("Dan Field (never checked in)"))
            #expect(!log.contains("Uncaught"), "\(log.suffix(400))")

            let png = folder.appending(path: "map.png")
            try await Chromium.screenshot(of: page, to: png)
            let bytes = try Data(contentsOf: png)
            #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) && bytes.count > 10_000)

            // A map made for one team offers that team in its filter (seen before: "all teams" only), counts in
            // words that agree with the number ("1 task", not "1 tasks"), and an empty map says so.
            let blue = folder.appending(path: "blue.html")
            #expect(try await w.tool("map", "--team", "blue", "--html", blue.path).status == 0)
            let (blueDOM, blueLog) = try await Chromium.dumpDOM(of: blue)
            #expect(!blueDOM.contains("data-error"), "\(blueLog.suffix(400))")
            #expect(blueDOM.contains("<option value=\"blue\">blue</option>") && !blueDOM.contains("all teams"), "\(blueDOM.suffix(3000))")
            #expect(blueDOM.contains("1 task, 1 worker,"), "\(blueDOM.suffix(3000))")
            let empty = folder.appending(path: "empty.html")
            #expect(try await w.tool("map", "--status", "cancelled", "--html", empty.path).status == 0)
            let (emptyDOM, _) = try await Chromium.dumpDOM(of: empty)
            #expect(emptyDOM.contains("No tasks or workers match: nothing to show."), "\(emptyDOM.suffix(3000))")
        }
    }
}
