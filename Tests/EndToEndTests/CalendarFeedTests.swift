import Foundation
import LocalPostgres
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// A worker's calendar feed, read by the `icalendar` package from PyPI (nobody here wrote it):
/// their work from today on, each task a VEVENT with a stable UID, its version as SEQUENCE, its
/// planned start, and text kept as written; a revoked, replaced or made-up address finds nothing.
@Suite("Calendar feeds")
struct CalendarFeedTests {
    struct Event: Decodable, Equatable {
        var uid: String
        var summary: String
        var location: String
        var start: String
        var end: String
        var sequence: Int
    }

    /// The feed as `icalendar` reads it.
    static func parse(_ text: String, folder: URL) throws -> [Event] {
        let input = folder.appending(path: "feed-\(UUID().uuidString).ics")
        let output = folder.appending(path: "feed-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: input)
        let script = """
            import icalendar, json, sys
            calendar = icalendar.Calendar.from_ical(open(sys.argv[1], 'rb').read())
            assert calendar.get('version') == '2.0', calendar.get('version')
            events = [{'uid': str(e.get('uid')), 'summary': str(e.get('summary')), 'location': str(e.get('location', '')),
                       'start': e.decoded('dtstart').isoformat(), 'end': e.decoded('dtend').isoformat(),
                       'sequence': int(e.get('sequence'))} for e in calendar.walk('VEVENT')]
            json.dump(events, open(sys.argv[2], 'w'))
            """
        let status = try ChildProcess.run(
            ["/usr/bin/env", "python3", "-c", script, input.path, output.path], standardOutput: "/dev/null",
            standardError: folder.appending(path: "python.err").path)
        #expect(status == 0, "\((try? String(contentsOf: folder.appending(path: "python.err"), encoding: .utf8)) ?? "")")
        return try JSONDecoder().decode([Event].self, from: Data(contentsOf: output))
    }

    @Test func aWorkersFeedShowsTheirWorkFromTodayAsEventsAndEndsWhenRevoked() async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "calendar-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let manager = ManagerTool(url)
            _ = try await manager.ok("person", "add", "--first", "Ann", "--last", "Field", "--email", "ann@example.org")
            _ = try await manager.ok("person", "add", "--first", "Bo", "--last", "Berg", "--email", "bo@example.org")
            _ = try await manager.ok("team", "add", "red", "--name", "Red")
            for who in ["ann", "bo"] { _ = try await manager.ok("team", "add-member", "red", "\(who)@example.org") }
            _ = try await manager.ok(
                "location", "add", "--name", "Substation 7, north", "--lat", "59.33", "--lon", "18.06", "--street", "Kungsgatan 1",
                "--city", "Stockholm")
            let zone = Zone.utc
            let tomorrow = zone.date(of: Date()).adding(days: 1)
            func create(_ arguments: String...) async throws -> FieldTask {
                try await {
                    let run = try await manager.run(["task", "create", "--team", "red", "--json"] + arguments)
                    #expect(run.status == 0, "\(run.stderr)")
                    return try JSONOutput.decode(FieldTask.self, run.stdout)
                }()
            }
            let windowed = try await create(
                "--title", "Meter; swap, \"north\" \\ side", "--assignee", "ann@example.org", "--location", "1",
                "--window", "\(tomorrow)T09:00/PT2H")
            let planned = try await create(
                "--title", "Read meters", "--assignee", "ann@example.org", "--due", "\(tomorrow)T17:00", "--duration", "30")
            _ = try await create("--title", "Bo's job", "--assignee", "bo@example.org", "--window", "\(tomorrow)T10:00/PT1H")
            _ = try await create("--title", "Last week", "--assignee", "ann@example.org", "--due", "2020-01-01")
            let start = zone.instant(tomorrow, LocalTime(hour: 13, minute: 15)!)
            try await CentralStore.withStore(url) { store in
                _ = try await store.applyDayPlan(
                    teamID: planned.teamID!, day: tomorrow,
                    [PlannedAssignment(taskID: planned.id, version: planned.version, assigneeID: planned.assigneeID, plannedStart: start)])
            }

            let issued = try await manager.ok("person", "calendar", "issue", "ann@example.org").trimmingCharacters(
                in: .whitespacesAndNewlines)
            #expect(issued.hasPrefix("/calendar/twcal_") && issued.hasSuffix(".ics"), "\(issued)")
            let service = ServiceProcess.run(
                databaseURL: url.connectionString, replicas: folder.appending(path: "replicas"), log: folder.path + "/service.log")
            try await service.start()
            defer { service.stopInBackground() }
            let port = try #require(service.port)
            let answer = try await LocalHTTP.request(port: port, issued)
            #expect(answer.status == 200 && answer.header("content-type") == "text/calendar; charset=utf-8")
            #expect(answer.text.contains("\r\n") && answer.text.split(separator: "\r\n").allSatisfy { $0.utf8.count <= 75 })
            let events = try Self.parse(answer.text, folder: folder)
            #expect(
                Set(events.map(\.uid)) == ["task-\(planned.id)@teamwork", "task-\(windowed.id)@teamwork"], "only Ann's, from today on")
            let meter = try #require(events.first { $0.uid == "task-\(windowed.id)@teamwork" })
            #expect(meter.summary == "Meter; swap, \"north\" \\ side", "text as written")
            #expect(meter.location.hasPrefix("Substation 7, north, Kungsgatan 1"))
            #expect(meter.start == "\(tomorrow)T09:00:00+00:00" && meter.end == "\(tomorrow)T11:00:00+00:00")
            let reading = try #require(events.first { $0.uid == "task-\(planned.id)@teamwork" })
            #expect(
                reading.start == "\(tomorrow)T13:15:00+00:00" && reading.end == "\(tomorrow)T13:45:00+00:00", "the plan, for 30 minutes")
            #expect(reading.sequence == planned.version + 1, "SEQUENCE rises with each change")

            // Replaced, revoked, made up: nothing.
            let again = try await manager.ok("person", "calendar", "issue", "ann@example.org").trimmingCharacters(
                in: .whitespacesAndNewlines)
            #expect(try await LocalHTTP.request(port: port, issued).status == 404, "the old address is gone")
            #expect(try await LocalHTTP.request(port: port, again).status == 200)
            _ = try await manager.ok("person", "calendar", "revoke", "ann@example.org")
            #expect(try await LocalHTTP.request(port: port, again).status == 404)
            #expect(try await LocalHTTP.request(port: port, "/calendar/twcal_\(String(repeating: "A", count: 43)).ics").status == 404)
            #expect(try await LocalHTTP.request(port: port, "/calendar/..%2F..%2Fetc%2Fpasswd").status == 404)
        }
    }

    /// Unknown addresses are counted per address: after 30 in a minute the next is refused
    /// before it costs the master a lookup.
    /// Issue 64, hole 5 (seen failing on a28f529: every made-up feed address cost a lookup in the
    /// master from one shared budget, so a polite flood from many addresses locked real feeds out).
    /// A feed's address carries a MAC of the service's: made-up ones are answered 404 before any
    /// budget or the master is asked, however many, and a real feed is served throughout.
    @Test func madeUpFeedAddressesCostNothingAndARealFeedIsServedThroughAFlood() async throws {
        // A flood: never beside a browser's test or another flood (MachineAlone; a CI run's customer
        // page, loaded in a browser beside it on the evening clock, took over 15 s).
        try await MachineAlone.run { try await Self.feedFlood() }
    }

    static func feedFlood() async throws {
        try await Self.withService { _, manager, port in
            _ = try await manager.ok("person", "add", "--first", "Ann", "--last", "Field", "--email", "ann@example.org")
            let issued = try await manager.ok("person", "calendar", "issue", "ann@example.org").trimmingCharacters(
                in: .whitespacesAndNewlines)
            let path = try #require(issued.split(separator: "\n").map(String.init).first { $0.hasPrefix("/calendar/twcal_") })
            let (statuses, real) = try await withThrowingTaskGroup(of: ([Int], Bool).self) { group in
                // 300 made-up addresses from 30 clients at once, ten each (more connections at once than this
                // only measure the kernel's accept queue on a loaded machine, not the service).
                for client in 0..<30 {
                    group.addTask {
                        var seen: [Int] = []
                        for index in 0..<10 {
                            let guess = "twcal_" + String(format: "%042dA", client * 10 + index)
                            seen.append(try await LocalHTTP.request(port: port, "/calendar/\(guess).ics").status)
                        }
                        return (seen, false)
                    }
                }
                // The real feed's calendar app asks six times, one after another, while the flood goes on.
                group.addTask {
                    var seen: [Int] = []
                    for _ in 0..<6 { seen.append(try await LocalHTTP.request(port: port, path).status) }
                    return (seen, true)
                }
                return try await group.reduce(into: ([Int](), [Int]())) { $1.1 ? ($0.1 += $1.0) : ($0.0 += $1.0) }
            }
            #expect(statuses.allSatisfy { $0 == 404 }, "none reached a budget: \(Set(statuses))")
            #expect(real.allSatisfy { $0 == 200 }, "the real feed throughout: \(real)")
        }
    }

    /// A feed issued before feeds were signed keeps working; while one does, an address whose MAC does
    /// not check is looked up as before, within the address's 30 a minute.
    @Test func aFeedMadeBeforeKeysStillWorksAndWhileItDoesGuessesAreCutOffAfterThirtyAMinute() async throws {
        try await Self.withService(
            before: { url, manager in
                _ = try await manager.ok("person", "add", "--first", "Ann", "--last", "Field", "--email", "ann@example.org")
                _ = try await CentralStore.withStore(url) { store in
                    try await store.connection.query(
                        """
                        INSERT INTO calendar_feeds (person_id, secret_hash, signed)
                        SELECT id, sha256(convert_to('twcal_' || repeat('L', 42) || 'A', 'UTF8')), false FROM people WHERE email = 'ann@example.org'
                        """, logger: store.logger
                    ).collect()
                }
            }
        ) { _, _, port in
            #expect(try await LocalHTTP.request(port: port, "/calendar/twcal_\(String(repeating: "L", count: 42))A.ics").status == 200)
            var last = 0
            for _ in 0..<31 where last != 429 {
                last = try await LocalHTTP.request(port: port, "/calendar/twcal_\(String(repeating: "B", count: 42))A.ics").status
            }
            #expect(last == 429)
        }
    }

    /// A service of its own on a fresh database, started after `before` ran.
    static func withService(
        before: (DatabaseURL, ManagerTool) async throws -> Void = { _, _ in },
        _ body: (DatabaseURL, ManagerTool, Int) async throws -> Void
    ) async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "calendar-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let manager = ManagerTool(url)
            try await before(url, manager)
            let service = ServiceProcess.run(
                databaseURL: url.connectionString, replicas: folder.appending(path: "replicas"), log: folder.path + "/service.log")
            try await service.start()
            defer { service.stopInBackground() }
            try await body(url, manager, try #require(service.port))
        }
    }
}
