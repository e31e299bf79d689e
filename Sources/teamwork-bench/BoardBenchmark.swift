import ArgumentParser
import CentralStore
import Foundation
import LocalPostgres
import TeamworkModel
import TeamworkTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `teamwork-bench board`: how fast the dispatcher's board renders a busy day on a real
/// `teamwork-service serve` (the build next to this one): a Stockholm utility with
/// `--teams` crews and `--tasks` tasks on one day, signed in as its dispatcher. Prints
/// p50/p95/p99 of the whole board, its live part, a task's page and the map, with
/// `/health` in the same run as the floor. `--screenshots DIR` also writes pictures
/// of the board, a task and the map in headless chromium (scripts/board-screenshot).
struct BoardBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "board",
        abstract: "Render times of the dispatcher's board for a busy day; optionally screenshots of it."
    )

    @Option(help: "PostgreSQL URL with rights to create a database; default: a throwaway local cluster.")
    var adminURL: String?
    @Option(help: "Tasks on the day.") var tasks = 500
    @Option(help: "Crews (teams of 8 workers).") var teams = 6
    @Option(help: "Requests per page measured.") var requests = 200
    @Option(help: "Port for the service.") var port = 18_284
    @Option(help: ArgumentHelp("Write board.png, task.png, map.png and the board at 1280, 1024, 768 and 390 px here.", valueName: "dir"))
    var screenshots: String?
    @Option(
        help:
            "Then this many junk sign-ins at once from one address, measured against /health, a worker's pull and the master's connections (0: none)."
    )
    var flood = 0

    func validate() throws {
        if !(1...20_000).contains(tasks) { throw ValidationError("--tasks must be 1 to 20000") }
        if !(1...100).contains(teams) { throw ValidationError("--teams must be 1 to 100") }
        if !(0...100_000).contains(requests) { throw ValidationError("--requests must be 0 to 100000") }
        if !(0...10_000).contains(flood) { throw ValidationError("--flood must be 0 to 10000") }
    }

    func run() async throws {
        let (admin, cluster) = try await ReplicaBenchmark.adminURL(adminURL)
        defer { _ = try? cluster?.stop() }
        let url = try await ReplicaBenchmark.freshDatabase("teamwork_bench_board", on: admin)
        let zone = try Zone("Europe/Stockholm")
        let day = zone.date(of: Date())
        let (token, sampleTask) = try await seed(url, day: day, zone: zone)

        let folder = FileManager.default.temporaryDirectory.appending(path: "teamwork-bench-board")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder.appending(path: "replicas"), withIntermediateDirectories: true)
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appending(path: "teamwork-service").path
        let log = folder.appending(path: "service.log").path
        let service = try ChildProcess.spawn(
            // `run` when flooding: the generator and the listener beside the endpoint, as /health reports them.
            [
                binary, flood > 0 ? "run" : "serve", "--database-url", url.connectionString, "--replicas",
                folder.appending(path: "replicas").path,
                "--port", String(port), "--log-level", "error",
            ], standardOutput: log, standardError: log)
        defer {
            kill(service, SIGTERM)
            _ = try? ChildProcess.wait(service)
        }
        try await LoadBenchmark.waitForHealth(port: port)

        let cookie = try await signIn(token: token)
        print(
            "machine: \(ProcessInfo.processInfo.processorCount) cores; \(tasks) tasks on \(day) in \(teams) crews of 8 "
                + "(Europe/Stockholm); teamwork-service \(flood > 0 ? "run" : "serve") (\(binary)); \(requests) requests per page, one at a time"
        )
        if requests > 0 {
            let pages: [(String, String, [String: String])] = [
                ("/health (floor)", "/health", [:]),
                ("day board, every crew", "/board?day=\(day)", ["Cookie": cookie]),
                ("live part (a refresh)", "/board?day=\(day)&part=live", ["Cookie": cookie]),
                ("one crew's board", "/board?day=\(day)&team=crew-1", ["Cookie": cookie]),
                ("a task's page", "/board/tasks/\(sampleTask)", ["Cookie": cookie]),
                ("map page", "/board/map?day=\(day)", ["Cookie": cookie]),
                ("map data (a refresh)", "/board/map.json?day=\(day)", ["Cookie": cookie]),
            ]
            var floor = 0.0
            for (label, path, headers) in pages {
                var samples: [Double] = []
                var bytes = 0
                for index in 0..<(requests + 5) {
                    let started = ContinuousClock.now
                    let answer = try await LocalHTTP.request(port: port, path, headers: headers, timeout: .seconds(30))
                    let elapsed = UploadBenchmark.seconds(ContinuousClock.now - started) * 1000
                    guard answer.status == 200 else { throw TeamworkError(.internal, "\(path): \(answer.status)") }
                    bytes = answer.body.count
                    if index >= 5 { samples.append(elapsed) }
                }
                samples.sort()
                let p50 = LoadBenchmark.percentile(samples, 0.5), p95 = LoadBenchmark.percentile(samples, 0.95)
                if floor == 0 { floor = p50 }
                print(
                    label.padding(toLength: 24, withPad: " ", startingAt: 0)
                        + String(
                            format: " p50 %7.1f ms  p95 %7.1f ms  p99 %7.1f ms  max %7.1f ms  %6.0f KB  (p50 %5.1f× /health)",
                            p50, p95, LoadBenchmark.percentile(samples, 0.99), samples.last ?? .nan,
                            Double(bytes) / 1024, p50 / floor))
            }
            let figures = LoadBenchmark.memory(service)
            print(String(format: "service RSS %.0f MB (peak %.0f MB)", figures.now, figures.peak))
        }
        if let screenshots { try await takeScreenshots(into: URL(fileURLWithPath: screenshots), token: token, task: sampleTask, day: day) }
        if flood > 0 { try await measureFlood(url, dispatcher: token) }
    }

    /// A utility's day: crews with skills, sites around Stockholm, tasks in windows from 07:00 to 18:00,
    /// two thirds of them given to someone; Maria Dispatcher (manager) with a token.
    func seed(_ url: DatabaseURL, day: LocalDate, zone: Zone) async throws -> (token: String, task: Int64) {
        try await CentralStore.withStore(url) { store in
            try await Migrator().migrate(store)
            var store = store
            let maria = try await store.addPerson(
                NewPerson(firstName: "Maria", lastName: "Dispatcher", email: "maria@bench.example", role: .manager))
            store.actorID = maria.id
            let first = ["Ann", "Bo", "Cleo", "Dag", "Eva", "Filip", "Greta", "Hugo", "Ida", "Jon", "Karin", "Leo"]
            let last = ["Lind", "Berg", "Ek", "Holm", "Nord", "Sund", "Strand", "Dahl"]
            let skills = [["electrical"], ["meters"], ["electrical", "climbing"], [], ["hv"], ["meters", "electrical"]]
            var crews: [(team: Team, members: [Person])] = []
            for crew in 1...teams {
                let team = try await store.addTeam(NewTeam(slug: "crew-\(crew)", name: "Crew \(crew)", timeZone: "Europe/Stockholm"))
                var members: [Person] = []
                for index in 0..<8 {
                    let person = try await store.addPerson(
                        NewPerson(
                            firstName: first[(crew * 8 + index) % first.count], lastName: last[(crew + index) % last.count],
                            email: "w\(crew)-\(index)@bench.example", role: .worker, skills: skills[index % skills.count]))
                    try await store.addMember(teamID: team.id, personID: person.id)
                    members.append(person)
                }
                crews.append((team, members))
            }
            var sites: [Location] = []
            for index in 0..<60 {
                sites.append(
                    try await store.addLocation(
                        NewLocation(
                            name: "Site \(index + 1)", latitude: 59.25 + Double(index % 10) * 0.03,
                            longitude: 17.85 + Double(index / 10) * 0.06,
                            address: Address(street: "Gatan \(index + 1)", city: "Stockholm", country: "SE"))))
            }
            let titles = ["Replace meter", "Inspect transformer", "Repair street light", "Read meters", "Cable fault", "Check substation"]
            var sample: Int64 = 0
            for index in 0..<tasks {
                let crew = crews[index % crews.count]
                let start = zone.instant(day, LocalTime(hour: 7 + (index / crews.count) % 11, minute: (index % 4) * 15)!)
                let assignee = index % 3 == 0 ? nil : crew.members[index % crew.members.count]
                let task = try await store.createTask(
                    NewTask(
                        title: "\(titles[index % titles.count]) #\(index + 1)", priority: Priority.allCases[index % 4],
                        assignment: try Assignment(teamID: crew.team.id, assigneeID: assignee?.id),
                        locationID: sites[index % sites.count].id,
                        window: try TimeWindow(start: start, end: start.addingTimeInterval(5_400))), force: true)
                if index == 1 { sample = task.id }
            }
            return (try await store.issueToken(personID: maria.id, label: "bench").secret, sample)
        }
    }

    /// Signs in through the board's form, as a browser does; the session cookie.
    func signIn(token: String) async throws -> String {
        let form = try await LocalHTTP.request(port: port, "/board/sign-in")
        guard let nonce = form.header("set-cookie")?.split(separator: ";").first?.split(separator: "=", maxSplits: 1).last else {
            throw TeamworkError(.internal, "the sign-in page set no cookie")
        }
        let answer = try await LocalHTTP.request(
            .post, port: port, "/board/sign-in",
            headers: [
                "Cookie": "__Host-tw_signin=\(nonce)", "Content-Type": "application/x-www-form-urlencoded",
            ], body: Data("csrf=\(nonce)&token=\(token)".utf8))
        guard answer.status == 303,
            let session = answer.header("set-cookie")?.split(separator: "\n")
                .first(where: { $0.hasPrefix("__Host-tw_session=") })?.split(separator: ";").first
        else {
            throw TeamworkError(.internal, "sign-in failed: \(answer.status) \(answer.text.prefix(200))")
        }
        return String(session)
    }

    func takeScreenshots(into folder: URL, token: String, task: Int64, day: LocalDate) async throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let page = try await BrowserPage.launch()
        do {
            let board = "http://127.0.0.1:\(port)/board"
            // Signed in once the browser has left the sign-in page (a click before the page settled is tried again).
            for _ in 0..<3 {
                let url = try await page.url()
                if url.contains("/board") && !url.hasSuffix("/sign-in") { break }
                try await page.open(board + "/sign-in")
                try await page.fill("#token", with: token)
                try await page.click("form[action='/board/sign-in'] button")
                for _ in 0..<40 where try await page.url().hasSuffix("/sign-in") { try await Task.sleep(for: .milliseconds(100)) }
                try await page.waitForLoad()
            }
            guard try await !page.url().hasSuffix("/sign-in") else { throw TeamworkError(.internal, "the browser could not sign in") }
            for (file, path) in [
                ("board.png", "?day=\(day)&team=crew-1&team=crew-2"), ("task.png", "/tasks/\(task)"), ("map.png", "/map?day=\(day)"),
            ] {
                try await page.open(board + path)
                if file == "map.png" { try await page.waitUntil("document.body.dataset.ready === '1'") }
                try await Task.sleep(for: .milliseconds(500))
                try await page.screenshot(to: folder.appending(path: file))
                print("wrote \(folder.appending(path: file).path)")
            }
            // The board at a desktop, a laptop, a portrait tablet and a phone (an agenda below 800 px).
            for width in [1280, 1024, 768, 390] {
                _ = try await page.send(
                    "Emulation.setDeviceMetricsOverride", ["width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 800])
                try await page.open(board + "?day=\(day)&team=crew-1&team=crew-2")
                try await Task.sleep(for: .milliseconds(500))
                let file = folder.appending(path: "board-\(width).png")
                try await page.screenshot(to: file)
                print("wrote \(file.path)")
            }
        } catch {
            await page.close()
            throw error
        }
        await page.close()
    }
}

extension BoardBenchmark {
    /// Five bursts of `flood` junk sign-ins at once from 127.0.0.1 while /health and a worker's pull are
    /// asked one after the other and the master's client connections counted: what the sign-in budget
    /// leaves the others.
    func measureFlood(_ url: DatabaseURL, dispatcher: String) async throws {
        let (worker, team) = try await CentralStore.withStore(url) { store in
            let person = try await store.listPeople().first { $0.role == .worker }!
            let team = try await store.teams(ofPerson: person.id)[0].id
            return (try await store.issueToken(personID: person.id, label: "flood bench").secret, team)
        }
        let watcher = try await CentralStore.connect(url, queryDeadline: .seconds(10))
        defer { Task { await watcher.close() } }
        let limit = try await watcher.clientConnections().limit
        let pull = "/v1/replicas/team-\(team)/changes"
        for _ in 0..<200
        where (try? await LocalHTTP.request(port: port, pull, headers: ["Authorization": "Bearer \(worker)"]).status) != 200 {
            try await Task.sleep(for: .milliseconds(100))
        }
        func backends() async throws -> Int { try await watcher.clientConnections().open }
        let before = try await backends()
        let done = Locked(false)
        let started = ContinuousClock.now
        async let sampled: (most: Int, health: [Double], healthFailures: Int, pulls: [Double], pullFailures: Int) = {
            var (most, health, healthFailures, pulls, pullFailures) = (0, [Double](), 0, [Double](), 0)
            while !done.value {
                most = max(most, (try? await backends()) ?? 0)
                var at = ContinuousClock.now
                let healthy = (try? await LocalHTTP.request(port: port, "/health", timeout: .seconds(10)).status) == 200
                health.append(UploadBenchmark.seconds(ContinuousClock.now - at) * 1000)
                if !healthy { healthFailures += 1 }
                at = ContinuousClock.now
                let pulled =
                    (try? await LocalHTTP.request(
                        port: port, pull, headers: ["Authorization": "Bearer \(worker)"],
                        timeout: .seconds(10)
                    ).status) == 200
                pulls.append(UploadBenchmark.seconds(ContinuousClock.now - at) * 1000)
                if !pulled { pullFailures += 1 }
                try? await Task.sleep(for: .milliseconds(5))
            }
            return (most, health, healthFailures, pulls, pullFailures)
        }()
        let statuses = Locked<[Int: Int]>([:])
        // Five bursts back to back: the first meets an address with its minute unused, the rest a spent one.
        for _ in 0..<5 {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<flood {
                    group.addTask {
                        let nonce = TokenSecret.randomBase64URL()
                        let status =
                            (try? await LocalHTTP.request(
                                .post, port: port, "/board/sign-in",
                                headers: [
                                    "Cookie": "__Host-tw_signin=\(nonce)", "Content-Type": "application/x-www-form-urlencoded",
                                ], body: Data("csrf=\(nonce)&token=tw_\(TokenSecret.randomBase64URL())".utf8), timeout: .seconds(60)
                            ).status) ?? -1
                        statuses.mutate { $0[status, default: 0] += 1 }
                    }
                }
            }
        }
        let elapsed = UploadBenchmark.seconds(ContinuousClock.now - started)
        done.mutate { $0 = true }
        var figures = await sampled
        figures.health.sort()
        figures.pulls.sort()
        let answers = statuses.value.sorted { $0.key < $1.key }.map { "\($0.value) × \($0.key)" }.joined(separator: ", ")
        print(String(format: "flood: 5 bursts of %d junk sign-ins at once from one address in %.2f s: %@", flood, elapsed, answers))
        print("master client connections: \(before) before, \(figures.most) at most during the flood (max_connections \(limit))")
        print(
            String(
                format: "/health during the flood: %d asked, %d not 200, p50 %.1f ms, p99 %.1f ms", figures.health.count,
                figures.healthFailures, LoadBenchmark.percentile(figures.health, 0.5), LoadBenchmark.percentile(figures.health, 0.99)))
        print(
            String(
                format: "a worker's pull during the flood: %d asked, %d not 200, p50 %.1f ms, p99 %.1f ms", figures.pulls.count,
                figures.pullFailures, LoadBenchmark.percentile(figures.pulls, 0.5), LoadBenchmark.percentile(figures.pulls, 0.99)))
        let signedIn = (try? await signIn(token: dispatcher)) != nil
        print("the dispatcher signs in from the same address after the flood: \(signedIn ? "yes" : "no (the address used its minute)")")
    }
}
