import ArgumentParser
import CentralStore
import Foundation
import LocalPostgres
import TeamworkModel
import TeamworkTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `teamwork-bench app`: the field worker's phone app (`/app/`, docs/phone.md) on a real
/// `teamwork-service run` and a real headless chromium at 390 px: the bytes of a first load, then
/// how long the worker's day (`--tasks` tasks) takes to show, from the network and then from the
/// phone's own copy with the service stopped (the service worker's cache and IndexedDB), and how
/// long a new assignment takes to show live. `--screenshots DIR` writes pictures of the day and a
/// task's page (scripts/app-screenshot).
struct AppBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app",
        abstract: "The phone app's first-load size and how fast a worker's day opens, online and offline; optionally screenshots."
    )

    @Option(help: "PostgreSQL URL with rights to create a database; default: a throwaway local cluster.")
    var adminURL: String?
    @Option(help: "Tasks assigned to the worker on the day.") var tasks = 200
    @Option(help: "Loads measured each way.") var loads = 10
    @Option(help: "Port for the service.") var port = 18_285
    @Option(help: ArgumentHelp("Write day.png and task.png (390 px) here.", valueName: "dir")) var screenshots: String?

    func validate() throws {
        if !(1...5_000).contains(tasks) { throw ValidationError("--tasks must be 1 to 5000") }
        if !(1...1_000).contains(loads) { throw ValidationError("--loads must be 1 to 1000") }
    }

    func run() async throws {
        let (admin, cluster) = try await ReplicaBenchmark.adminURL(adminURL)
        defer { _ = try? cluster?.stop() }
        let url = try await ReplicaBenchmark.freshDatabase("teamwork_bench_app", on: admin)
        let zone = try Zone("Europe/Stockholm")
        let day = zone.date(of: Date())
        let (worker, team, sample) = try await seed(url, day: day, zone: zone)
        let folder = FileManager.default.temporaryDirectory.appending(path: "teamwork-bench-app")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder.appending(path: "replicas"), withIntermediateDirectories: true)
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appending(path: "teamwork-service").path
        let service = ServiceProcess(
            [
                "run", "--database-url", url.connectionString, "--replicas", folder.appending(path: "replicas").path,
                "--port", String(port), "--log-level", "error", "--sweep", "0.5",
            ], port: port, log: folder.appending(path: "service.log").path)
        service.arguments[0] = binary
        try await service.start()
        defer { service.stopInBackground() }

        // The phone reaches the service through a relay that counts every byte each way: the first
        // load is what a phone pays for at the wire, from the pairing link to a working day.
        let relay = try CountingRelay(to: port)
        defer { relay.stop() }
        let app = "http://127.0.0.1:\(relay.port)/app/"
        print(
            "machine: \(ProcessInfo.processInfo.processorCount) cores; \(tasks) tasks for one worker on \(day); chromium at 390 px; "
                + "teamwork-service run (\(binary))")

        let page = try await BrowserPage.launch(width: 390, height: 844, mobile: true)
        do {
            let link = try await CentralStore.withStore(url) { store in
                "\(app)pair?code=\(try await store.pairDevice(personID: worker).code)"
            }
            try await page.open(link)
            try await page.fill("#name", with: "Bench phone")
            try await page.clickAndWaitForNavigation("form[action='/app/pair'] button")
            let first = ContinuousClock.now
            try await page.waitUntil("document.querySelectorAll('#mine .task').length >= \(tasks)", within: .seconds(60))
            print(String(format: "first sync after pairing: %.0f ms to the whole day on screen", Self.ms(ContinuousClock.now - first)))
            try await page.waitUntil("navigator.serviceWorker.controller", within: .seconds(20))
            // Settled: the service worker installed and nothing more coming (a live wait stays open, unanswered).
            _ = try await page.evaluate("navigator.serviceWorker.ready.then(() => true)")
            var last = -1
            while relay.down + relay.up != last {
                last = relay.down + relay.up
                try await Task.sleep(for: .seconds(2))
            }
            print(
                String(
                    format: "first load, pairing link to a working day (every request, the service worker's too, headers included): "
                        + "%.1f KiB at the wire (%.1f KiB down, %.1f KiB up, %d requests, %d connections)",
                    Double(relay.down + relay.up) / 1024, Double(relay.down) / 1024, Double(relay.up) / 1024, relay.requests,
                    relay.connections))

            // Live: a new assignment in the worker's team, from the master to the phone's screen without a reload.
            var live: [Double] = []
            for index in 0..<5 {
                let started = ContinuousClock.now
                let id = try await CentralStore.withStore(url) { store in
                    try await store.createTask(
                        NewTask(title: "Live #\(index + 1)", assignment: try Assignment(teamID: team, assigneeID: worker)), force: true
                    ).id
                }
                try await page.waitUntil("document.querySelector('#mine [data-task=\"\(id)\"]')", within: .seconds(30))
                live.append(Self.ms(ContinuousClock.now - started))
            }
            live.sort()
            print(
                String(
                    format: "new assignment on screen (master write → generator → live wait → screen): p50 %.0f ms, max %.0f ms (5)",
                    LoadBenchmark.percentile(live, 0.5), live.last ?? .nan))

            let online = try await openings(page, app)
            try await service.stop()
            let offline = try await openings(page, app)
            for (label, samples) in [("online (network, then sync)", online), ("offline (service stopped)", offline)] {
                print(
                    label.padding(toLength: 28, withPad: " ", startingAt: 0)
                        + String(
                            format: " day of %d on screen: p50 %6.0f ms  p95 %6.0f ms  max %6.0f ms  (%d loads, from navigation start)",
                            tasks + 5, LoadBenchmark.percentile(samples, 0.5), LoadBenchmark.percentile(samples, 0.95),
                            samples.last ?? .nan, samples.count))
            }
            if let screenshots {
                let out = URL(fileURLWithPath: screenshots)
                try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
                try await page.screenshot(to: out.appending(path: "day.png"), wholePage: false)
                _ = try await page.evaluate("location.hash = '#task/\(sample)'")
                try await page.waitUntil("document.querySelector('.checklist')")
                try await page.screenshot(to: out.appending(path: "task.png"))
                print("wrote \(out.appending(path: "day.png").path) and task.png")
            }
        } catch {
            await page.close()
            throw error
        }
        await page.close()
    }

    /// `loads` openings of the app, each timed from navigation start to the whole day on screen.
    func openings(_ page: BrowserPage, _ app: String) async throws -> [Double] {
        var samples: [Double] = []
        for _ in 0..<loads {
            try await page.open("about:blank")
            try await page.open(app)
            try await page.waitUntil("document.querySelectorAll('#mine .task').length >= \(tasks)", within: .seconds(30))
            guard let at = try await page.evaluate("Number(document.body.dataset.rendered)").double else {
                throw TeamworkError(.internal, "the app did not say when it showed the day")
            }
            samples.append(at)
        }
        return samples.sorted()
    }

    static func ms(_ duration: Duration) -> Double { UploadBenchmark.seconds(duration) * 1000 }

    /// One crew, Ann with `tasks` tasks on the day (a checklist on each tenth), a site for each.
    func seed(_ url: DatabaseURL, day: LocalDate, zone: Zone) async throws -> (worker: Int64, team: Int64, sample: Int64) {
        try await CentralStore.withStore(url) { store in
            try await Migrator().migrate(store)
            var store = store
            let maria = try await store.addPerson(
                NewPerson(firstName: "Maria", lastName: "Dispatcher", email: "maria@bench.example", role: .manager))
            store.actorID = maria.id
            let ann = try await store.addPerson(NewPerson(firstName: "Ann", lastName: "Lind", email: "ann@bench.example", role: .worker))
            let team = try await store.addTeam(NewTeam(slug: "crew-1", name: "Crew 1", timeZone: "Europe/Stockholm"))
            try await store.addMember(teamID: team.id, personID: ann.id)
            _ = try await store.publishChecklist(
                name: "Meter swap",
                items: [
                    ChecklistItem(key: "isolated", kind: .check, label: "Isolator locked out", required: true),
                    ChecklistItem(key: "reading", kind: .number, label: "Final reading", required: true, unit: "kWh", min: "0"),
                    ChecklistItem(key: "seal", kind: .choice, label: "Meter seal", options: ["intact", "broken", "replaced"]),
                    ChecklistItem(key: "photo", kind: .photo, label: "The new meter", required: true),
                    ChecklistItem(key: "signed", kind: .signature, label: "Customer's signature"),
                ], existing: false)
            var sample: Int64 = 0
            for index in 0..<tasks {
                let site = try await store.addLocation(
                    NewLocation(
                        name: "Site \(index + 1)", latitude: 59.25 + Double(index % 10) * 0.03,
                        longitude: 17.85 + Double(index / 10 % 10) * 0.06,
                        address: Address(street: "Gatan \(index + 1)", city: "Stockholm", country: "SE")))
                let start = zone.instant(day, LocalTime(hour: 7 + index * 11 / max(tasks, 1), minute: (index % 4) * 15)!)
                let task = try await store.createTask(
                    NewTask(
                        title: "Replace meter #\(index + 1)", description: "Meter in the cellar; key at the neighbour's.",
                        priority: Priority.allCases[index % 4], assignment: try Assignment(teamID: team.id, assigneeID: ann.id),
                        locationID: site.id, window: try TimeWindow(start: start, end: start.addingTimeInterval(3_600)),
                        checklist: index % 10 == 0 ? "Meter swap" : nil), force: true)
                if index == 0 { sample = task.id }
            }
            return (ann.id, team.id, sample)
        }
    }
}
