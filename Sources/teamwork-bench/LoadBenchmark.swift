import ArgumentParser
@_spi(Benchmark) import CentralStore
import Foundation
import LocalPostgres
import ReplicaGenerator
import SyncServer
import TeamworkModel
import TeamworkTestSupport

/// `teamwork-bench load`: a fleet of simulated workers against a real
/// `teamwork-service run` (a child process, the release build next to this
/// one), driven over loopback by wrk with every worker's own token. Prints
/// req/s and latency for the /health ceiling, no-op pulls, first syncs and
/// pushes with their ratio to /health, the live fan-out from one master
/// commit to every waiting device, the service's RSS and open files, and
/// /health while thousands of live waits are open.
struct LoadBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Many workers at once against teamwork-service run: pulls, pushes, live fan-out, open waits (needs wrk)."
    )

    @Option(help: "PostgreSQL URL with rights to create a database; default: a throwaway local cluster.")
    var adminURL: String?
    @Option(help: "Teams.") var teams = 50
    @Option(help: "Workers per team (each with a token of their own).") var workersPerTeam = 20
    @Option(
        help:
            "Watching devices for fan-out and the restart storm: teams of 100 chosen to reach it (instead of --teams, --workers-per-team).")
    var devices: Int?
    @Option(help: "Tasks per team.") var tasksPerTeam = 200
    @Option(help: "Seconds per wrk run.") var seconds = 10
    @Option(help: "Live-mode waits held open while /health is measured.") var openWaits = 5_000
    @Option(help: "Port for the service.") var port = 18_282
    @Option(help: "Live fan-outs measured one after another (the first after the service started writes to cold files).")
    var fanOuts = 3
    @Option(
        help: "Measure only these, comma-separated: noop, first, push, resend, fanout, restart, waits (the /health ceiling always).")
    var only: String?
    @Option(
        help:
            "How the fleet hears of changes, each measured in turn: stream (what watch uses), wait (one live-mode request after another). The restart storm uses the first."
    )
    var live = "stream,wait"
    @Option(help: "The service's --log-level (its log is service.log in the bench folder).") var serviceLogLevel = "error"
    @Flag(help: "Keep the service and its cluster running at the end, until Ctrl-C (to attach perf or gdb).")
    var hold = false

    private func runs(_ phase: String) -> Bool {
        guard let only else { return true }
        return only.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == phase }
    }

    func run() async throws {
        guard let wrk = ["/usr/bin/wrk", "/usr/local/bin/wrk"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw TeamworkError(.configuration, "wrk is needed: apt-get install -y wrk")
        }
        // A connection per device: the benchmark needs as many files as the service.
        _ = FileLimit.raise()
        let (admin, cluster) = try await ReplicaBenchmark.adminURL(adminURL)
        defer { _ = try? cluster?.stop() }
        let url = try await ReplicaBenchmark.freshDatabase("teamwork_bench_load", on: admin)
        let (teams, workersPerTeam) = devices.map { ((max(1, $0) + 99) / 100, min(100, max(1, $0))) } ?? (self.teams, self.workersPerTeam)
        let workers = try await CentralStore.withStore(url) { store in
            try await Migrator().migrate(store)
            try await store.benchmarkSeed(teams: teams, tasksPerTeam: tasksPerTeam, workersPerTeam: workersPerTeam)
            return try await store.benchmarkTokens()
        }
        let folder = FileManager.default.temporaryDirectory.appending(path: "teamwork-bench-load")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let replicas = folder.appending(path: "replicas")
        try await ReplicaGenerator(.init(databaseURL: url, directory: replicas)).rebuildAll()

        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appending(path: "teamwork-service").path
        let log = folder.appending(path: "service.log").path
        let arguments = [
            binary, "run", "--database-url", url.connectionString, "--replicas", replicas.path, "--port", String(port),
            "--log-level", serviceLogLevel,
        ]
        var service = try ChildProcess.spawn(arguments, standardOutput: log, standardError: log)
        defer {
            kill(service, SIGTERM)
            _ = try? ChildProcess.wait(service)
        }
        let base = "http://127.0.0.1:\(port)"
        try await Self.waitForHealth(port: port)

        print(
            "machine: \(ProcessInfo.processInfo.processorCount) cores; \(workers.count) workers in \(teams) teams, "
                + "\(tasksPerTeam) tasks a team; teamwork-service run (\(binary)); wrk \(seconds) s a run")

        // Every worker's current position in their team's replica, as a device that synced holds it.
        func positions() async throws -> [Fleet.Device] {
            try await withThrowingTaskGroup(of: (Int, Fleet.Device).self) { group in
                var current: [Fleet.Device?] = Array(repeating: nil, count: workers.count)
                for (index, worker) in workers.enumerated() {
                    if index >= 32, let (done, device) = try await group.next() { current[done] = device }
                    group.addTask {
                        let replica = "/v1/replicas/team-\(worker.teamID)/changes"
                        let page = try await Self.get(port: port, replica + "?limit=10000", token: worker.secret)
                        return (index, Fleet.Device(token: worker.secret, replica: replica, epoch: page.epoch, since: page.upTo))
                    }
                }
                for try await (done, device) in group { current[done] = device }
                return current.compactMap { $0 }
            }
        }
        var current = try await positions()

        let requests = folder.appending(path: "requests.txt")
        func writeRequests(_ lines: [String]) throws {
            var random = SplitMix(seed: 2026)
            try lines.shuffled(using: &random).joined(separator: "\n").write(to: requests, atomically: true, encoding: .utf8)
        }
        let script = folder.appending(path: "requests.lua")
        try Self.luaScript.write(to: script, atomically: true, encoding: .utf8)
        func measure(_ label: String, connections: Int, path: String = "/health", scripted: Bool = true) throws -> WrkResult {
            var arguments = [wrk, "-t2", "-c\(connections)", "-d\(seconds)s", "--latency"]
            if scripted { arguments += ["-s", script.path] }
            arguments.append(base + path)
            if scripted { arguments += ["--", requests.path] }
            let output = folder.appending(path: "wrk.out").path
            _ = try ChildProcess.run(arguments, standardOutput: output, standardError: output)
            let result = try WrkResult(String(decoding: FileManager.default.contents(atPath: output) ?? Data(), as: UTF8.self))
            return result
        }

        let health = try measure("health", connections: 64, scripted: false)
        print(health.line("GET /health (the server's HTTP ceiling), 64 connections", ceiling: nil))

        if runs("noop") {
            try writeRequests(current.map { "GET \($0.token) \($0.replica)?epoch=\($0.epoch)&since=\($0.since)" })
            let noOp = try measure("no-op", connections: 64)
            print(noOp.line("no-op pull of a current device, 64 connections", ceiling: health))
        }
        if runs("first") {
            try writeRequests(workers.map { "GET \($0.secret) /v1/replicas/team-\($0.teamID)/changes?limit=1000" })
            let first = try measure("first", connections: 16)
            print(first.line("first sync of a \(tasksPerTeam)-task team (no epoch), 16 connections", ceiling: health))
        }
        if runs("push") {
            try writeRequests(workers.map { "POST \($0.secret) /v1/replicas/team-\($0.teamID)/changes" })
            let push = try measure("push", connections: 16)
            print(push.line("push of one check-in, 16 connections", ceiling: health))
        }

        if runs("resend") {
            // What keeping a change until the master confirms it costs (docs/protocol.md): each worker's
            // one check-in, pushed once and taken in by the listener, then sent again as a device does at
            // its next sync, and answered "settled" from the master's ledger.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, worker) in workers.enumerated() {
                    if index >= 32 { try await group.next() }
                    group.addTask {
                        let response = try await LocalHTTP.request(
                            .post, port: port, "/v1/replicas/team-\(worker.teamID)/changes",
                            headers: ["Authorization": "Bearer \(worker.secret)", "Content-Type": "application/json"],
                            body: Data(Self.resentBody(String(index), resent: false).utf8), timeout: .seconds(60))
                        guard response.status == 200 else { throw TeamworkError(.internal, "a first push answered \(response.status)") }
                    }
                }
                try await group.waitForAll()
            }
            let deadline = ContinuousClock.now + .seconds(120)
            while try await CentralStore.withStore(url, { try await $0.benchmarkCount(changesLike: "bench-resend-%") }) < workers.count {
                guard ContinuousClock.now < deadline else { throw TeamworkError(.unavailable, "the listener did not take the pushes in") }
                try await Task.sleep(for: .milliseconds(200))
            }
            try writeRequests(workers.enumerated().map { "RESEND \($1.secret) /v1/replicas/team-\($1.teamID)/changes \($0)" })
            let resend = try measure("resend", connections: 16)
            print(resend.line("the same check-in sent again, answered settled from the master's ledger, 16 connections", ceiling: health))
        }

        let (_, filesAfterRequests, peakAfterRequests) = Self.memory(service)
        print(
            String(format: "service peak RSS through the pulls and pushes: %.0f MB (%d open files)", peakAfterRequests, filesAfterRequests))

        // Live fan-out: every worker waits on their team over a connection kept alive, as `watch` does;
        // one master commit changes a task of every team. (The pushes moved the replicas on: devices
        // catch up first, as a watcher would.)
        let modes = try live.split(separator: ",").map { text -> Fleet.Live in
            guard let mode = Fleet.Live(rawValue: text.trimmingCharacters(in: .whitespaces)) else {
                throw ValidationError("--live takes stream and wait, comma-separated, not \(text)")
            }
            return mode
        }
        for (turn, mode) in modes.enumerated() where runs("fanout") || (runs("restart") && turn == 0) {
            current = try await positions()
            print("live mode: \(mode.rawValue)=25")
            let fleet = Fleet(port: port, devices: current, waitSeconds: 25, live: mode)
            let overflowsAtStart = Self.listenOverflows()
            let settleStarted = ContinuousClock.now
            await fleet.start()
            let settled = try await Self.waitForWaiting(current.count, port: port, within: .seconds(120))
            print(
                String(
                    format: "%d devices connected (at most 256 connecting at once), %d waiting after %.1f s",
                    current.count, settled.count, UploadBenchmark.seconds(ContinuousClock.now - settleStarted))
                    + Self.describe(fleet.failures()) + Self.overflowLine(since: overflowsAtStart))
            for round in runs("fanout") ? Array(1...max(1, fanOuts)) : [] {
                let waiting = try await Self.waitForWaiting(current.count, port: port, within: .seconds(60))
                let overflows = Self.listenOverflows()
                let files = Set(workers.map(\.teamID)).map { replicas.appending(path: "team-\($0).sqlite").path }
                let cpu = (Fleet.cpuSeconds(service), Fleet.cpuSeconds(getpid()))
                let fan = try await fleet.round(within: .seconds(60), files: files) {
                    _ = try await CentralStore.withStore(url) { try await $0.benchmarkTouchOneTaskPerTeam() }
                }
                let used = (Fleet.cpuSeconds(service) - cpu.0, Fleet.cpuSeconds(getpid()) - cpu.1)
                let latencies = fan.latencies
                print(
                    String(
                        format: "live fan-out %d of %d: %d devices waiting; one master commit touching %d teams -> "
                            + "%d answered; commit to answer p50 %.0f ms, p99 %.0f ms, max %.0f ms (generator, file write and wake included)",
                        round, fanOuts, waiting.count, teams, latencies.count, Self.percentile(latencies, 0.5),
                        Self.percentile(latencies, 0.99), latencies.max() ?? 0)
                        + (fan.filesWritten.map {
                            String(format: "; replica files written %.0f-%.0f ms after the commit", $0.first, $0.last)
                        } ?? "")
                        + String(format: "; CPU meanwhile: service %.2f s, benchmark %.2f s", used.0, used.1)
                        + Self.describe(fan.failures) + Self.overflowLine(since: overflows))
            }

            // A restart with every device watching: SIGTERM, start again, and every device reconnecting
            // the way `teamwork-worker watch` does (`Watcher.reconnecting`: full jitter).
            if runs("restart") && turn == 0 {
                _ = try await Self.waitForWaiting(current.count, port: port, within: .seconds(60))
                let overflows = Self.listenOverflows()
                _ = fleet.failures()
                let signalled = ContinuousClock.now
                kill(service, SIGTERM)
                _ = try? ChildProcess.wait(service)
                let down = ContinuousClock.now
                let overflowsDown = Self.listenOverflows()
                service = try ChildProcess.spawn(arguments, standardOutput: log, standardError: log)
                try await Self.waitForHealth(port: port)
                let healthy = ContinuousClock.now
                let overflowsHealthy = Self.listenOverflows()
                var curve: [String] = []
                let ninetyNine = try await Self.waitForWaiting(
                    Int((Double(current.count) * 0.99).rounded(.up)), port: port, within: .seconds(120)
                ) {
                    curve.append("\($0) s: \($1)")
                }
                let all = try await Self.waitForWaiting(current.count, port: port, within: .seconds(60))
                print(
                    String(
                        format:
                            "restart storm: SIGTERM to exit %.1f s, start to /health answering %.1f s; from then, 99%% of the devices waiting again "
                            + "after %.1f s, %d of %d after %.1f s (%d not waiting again)",
                        UploadBenchmark.seconds(down - signalled), UploadBenchmark.seconds(healthy - down), ninetyNine.seconds, all.count,
                        current.count,
                        ninetyNine.seconds + all.seconds, current.count - all.count)
                        + Self.describe(fleet.failures()) + Self.overflowLine(since: overflows)
                        + (overflowsDown.flatMap { d in
                            overflowsHealthy.map { h in " (\(d - (overflows ?? d)) while stopping, \(h - d) while starting)" }
                        } ?? ""))
                print("restart storm: devices waiting again, by seconds after /health: " + curve.joined(separator: ", "))
            }
            await fleet.stop()
            // The service learns of a closed connection only when its wait ends (at a change or its
            // time): the next fleet starts once those are gone, so that it is measured alone.
            let left = try await Self.waitForWaiting(0, port: port, within: .seconds(40), fewer: true)
            print(String(format: "the fleet disconnected: %d waits left open after %.1f s", left.count, left.seconds))
        }

        // Many open waits: /health still answers; memory and files of the service. A person holds
        // at most 12 waits, so the fleet's tokens are used up to that many times each.
        if runs("waits") {
            current = try await positions()
            let (rssBefore, _) = Self.processFigures(service)
            let holders = Fleet(port: port, devices: (0..<openWaits).map { current[$0 % current.count] }, waitSeconds: 25)
            await holders.start()
            let held = try await Self.waitForWaiting(openWaits, port: port, within: .seconds(120))
            let (rssNow, files) = Self.processFigures(service)
            let loaded = try measure("health under waits", connections: 64, scripted: false)
            print(
                String(
                    format: "%d live waits open (of %d asked): service RSS %.0f MB (%.0f MB before them, %.1f KB a wait), %d open files; ",
                    held.count, openWaits, rssNow, rssBefore, (rssNow - rssBefore) * 1024 / Double(max(1, held.count)), files)
                    + loaded.line("/health meanwhile", ceiling: nil) + Self.describe(holders.failures()))
            await holders.stop()
        }
        let (_, _, peak) = Self.memory(service)
        print(String(format: "service peak RSS over the whole run (open waits included): %.0f MB", peak))
        if hold {
            print("holding: teamwork-service pid \(service) at \(base), database \(url.connectionString); Ctrl-C ends it")
            try await Task.sleep(for: .seconds(86_400))
        }
    }

    // MARK: Parts

    /// Reads the requests file (one `METHOD TOKEN PATH` per line) into each wrk
    /// thread, which picks every request at random from it, as a fleet sends them
    /// (walking the list in order would send concurrent pushes to the same team's
    /// replica, where they share one group commit); a push gets a fresh change id each time.
    static let luaScript = """
        local reqs = {}
        local counter = 0
        local thread_id = 0
        local threads = 0
        setup = function(thread)
            threads = threads + 1
            thread:set("thread_id", threads)
        end
        init = function(args)
            for line in io.lines(args[1]) do
                local method, token, path, index = line:match("(%S+) (%S+) (%S+) ?(%S*)")
                table.insert(reqs, {method = method, token = token, path = path, index = index})
            end
            math.randomseed(os.time() * 100 + thread_id)
        end
        request = function()
            counter = counter + 1
            local r = reqs[math.random(#reqs)]
            local headers = {["Authorization"] = "Bearer " .. r.token}
            if r.method == "POST" then
                headers["Content-Type"] = "application/json"
                local body = string.format('{"changes":[{"id":"bench-%d-%d-%d","operation":"checkin","made_at":"%s","latitude":59.33,"longitude":18.06}]}',
                    thread_id, counter, os.time(), os.date("!%Y-%m-%dT%H:%M:%SZ"))
                return wrk.format("POST", r.path, headers, body)
            end
            if r.method == "RESEND" then
                headers["Content-Type"] = "application/json"
                local body = string.format('\(LoadBenchmark.resentBody("%s", resent: true))', r.index)
                return wrk.format("POST", r.path, headers, body)
            end
            return wrk.format("GET", r.path, headers)
        end
        """

    /// Worker `index`'s one check-in of the resend phase, as first pushed or as sent again.
    static func resentBody(_ index: String, resent: Bool) -> String {
        #"{"changes":[{"id":"bench-resend-\#(index)","operation":"checkin","made_at":"2026-01-05T08:00:00Z","latitude":59.33,"longitude":18.06}]"#
            + (resent ? #","resent":true}"# : "}")
    }

    struct WrkResult {
        var requestsPerSecond: Double
        var p50: Double
        var p99: Double
        var errors: String

        init(_ text: String) throws {
            func milliseconds(_ token: String) -> Double {
                let units: [(String, Double)] = [("us", 0.001), ("ms", 1), ("s", 1000)]
                for (unit, factor) in units where token.hasSuffix(unit) {
                    return (Double(token.dropLast(unit.count)) ?? .nan) * factor
                }
                return .nan
            }
            var rps = Double.nan, p50 = Double.nan, p99 = Double.nan
            var errors: [String] = []
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: " ").map(String.init)
                if fields.first == "Requests/sec:" { rps = Double(fields.last ?? "") ?? .nan }
                if fields.first == "50%" { p50 = milliseconds(fields.last ?? "") }
                if fields.first == "99%" { p99 = milliseconds(fields.last ?? "") }
                if line.contains("Non-2xx") || line.contains("Socket errors") { errors.append(line.trimmingCharacters(in: .whitespaces)) }
            }
            guard !rps.isNaN else { throw TeamworkError(.internal, "wrk printed no figures: \(text.prefix(300))") }
            self.requestsPerSecond = rps
            self.p50 = p50
            self.p99 = p99
            self.errors = errors.joined(separator: "; ")
        }

        func line(_ label: String, ceiling: WrkResult?) -> String {
            var text = String(format: "%@: %.0f req/s, p50 %.1f ms, p99 %.1f ms", label, requestsPerSecond, p50, p99)
            if let ceiling { text += String(format: " (%.1f%% of /health)", 100 * requestsPerSecond / ceiling.requestsPerSecond) }
            if !errors.isEmpty { text += " [\(errors)]" }
            return text
        }
    }

    struct Position: Decodable {
        var epoch: String
        var upTo: Int64
    }

    /// One GET on a connection of its own (SwiftNIO: Foundation's URLSession on
    /// Linux spends long enough per response to show in the fan-out figures).
    static func get(port: Int, _ uri: String, token: String) async throws -> Position {
        let response = try await LocalHTTP.request(port: port, uri, headers: ["Authorization": "Bearer \(token)"], timeout: .seconds(60))
        guard response.status == 200 else { throw TeamworkError(.internal, "\(uri): \(response.status)") }
        return try TeamworkJSON.decoder().decode(Position.self, from: response.body)
    }

    static func waitForHealth(port: Int) async throws {
        for _ in 0..<600 {
            if let response = try? await LocalHTTP.request(port: port, "/health", timeout: .seconds(5)), response.status == 200 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TeamworkError(.unavailable, "teamwork-service run did not become healthy")
    }

    /// Waits until the service holds `count` live-mode waits (by `teamwork_sync_open_waits`), or no
    /// more than `count` with `fewer`, or `limit` passes: how many it held, and when.
    /// `curve`: the count at each whole second on the way (how a restart's reconnections spread out).
    static func waitForWaiting(
        _ count: Int, port: Int, within limit: Duration, fewer: Bool = false,
        curve: ((Int, Int) -> Void)? = nil
    ) async throws -> (count: Int, seconds: Double) {
        let started = ContinuousClock.now
        var waiting = fewer ? Int.max : 0
        var second = 1
        while ContinuousClock.now - started < limit {
            waiting = (try? await LocalHTTP.metric("teamwork_sync_open_waits", port: port, timeout: .seconds(5))) ?? waiting
            if ContinuousClock.now - started >= .seconds(second) {
                curve?(second, waiting)
                second += 1
            }
            if fewer ? waiting <= count : waiting >= count { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return (waiting, UploadBenchmark.seconds(ContinuousClock.now - started))
    }

    /// Why a request got no answer: refused, reset, timed out, an HTTP status, or the error.
    static func cause(_ error: any Error) -> String {
        if error is LocalHTTP.TimedOut { return "timed out" }
        let text = "\(error)".lowercased()
        if text.contains("refused") { return "refused" }
        if text.contains("reset") { return "reset" }
        if text.contains("timeout") || text.contains("timed out") { return "timed out" }
        if let range = text.range(of: #": \d{3}$"#, options: .regularExpression) { return "HTTP " + text[range].dropFirst(2) }
        return String(text.prefix(60))
    }

    static func describe(_ failures: [String: Int]) -> String {
        guard !failures.isEmpty else { return "; no device without an answer" }
        return "; without an answer: " + failures.sorted { $0.value > $1.value }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
    }

    /// The kernel's count of connection attempts dropped because a listen queue was full.
    static func listenOverflows() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/net/netstat", encoding: .utf8) else { return nil }
        let lines = text.split(separator: "\n").filter { $0.hasPrefix("TcpExt:") }
        guard lines.count >= 2 else { return nil }
        let names = lines[0].split(separator: " "), values = lines[1].split(separator: " ")
        guard let index = names.firstIndex(of: "ListenOverflows"), index < values.count else { return nil }
        return Int(values[index])
    }

    static func overflowLine(since before: Int?) -> String {
        guard let before, let now = listenOverflows() else { return "" }
        return "; listen overflows \(now - before)"
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }

    /// RSS now and at its peak (MB), from /proc.
    static func memory(_ pid: pid_t) -> (now: Double, files: Int, peak: Double) {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        func kilobytes(_ key: String) -> Double {
            let line = status.split(separator: "\n").first { $0.hasPrefix(key) } ?? ""
            return Double(line.split(separator: " ").dropFirst().first { !$0.isEmpty }.map(String.init) ?? "") ?? .nan
        }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
        return (kilobytes("VmRSS:") / 1024, files, kilobytes("VmHWM:") / 1024)
    }

    static func processFigures(_ pid: pid_t) -> (rss: Double, files: Int) {
        let figures = memory(pid)
        return (figures.now, figures.files)
    }
}
