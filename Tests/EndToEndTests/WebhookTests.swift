import Foundation
import LocalPostgres
import Outbox
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// Webhooks end to end: the built tools, the service, and a receiver built on the standardwebhooks
/// package (scripts/webhook-receiver) that verifies every signature and drops repeats by id.
@Suite("Webhooks")
struct WebhookTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    struct Line: Decodable {
        var id: String?
        var type: String?
        var task: Int64?
        /// An SMS provider's request: to whom, and what.
        var to: String?
        var text: String?
        var verified: Bool
        var signatures: Int
        var `repeat`: Bool?
        var answered: Int
        /// What a job cost (task.completed, task.costed): the lines and their totals.
        var materials: [Cost]?
        var totals: [Total]?
        var labour: Labour?
    }

    /// The time on a job (task.completed, task.costed): minutes of work and travel, and the entries.
    struct Labour: Decodable, Equatable {
        struct Entry: Decodable, Equatable {
            var kind: String
            var worker: Cost.Worker
            var startedAt: String
            var endedAt: String
            var minutes: Int
            var source: String

            enum CodingKeys: String, CodingKey {
                case kind, worker, minutes, source
                case startedAt = "started_at"
                case endedAt = "ended_at"
            }
        }
        var workMinutes: Int
        var travelMinutes: Int
        var open: Int
        var entries: [Entry]

        enum CodingKeys: String, CodingKey {
            case open, entries
            case workMinutes = "work_minutes"
            case travelMinutes = "travel_minutes"
        }
    }

    struct Cost: Decodable, Equatable {
        struct Worker: Decodable, Equatable {
            var id: Int64
            var name: String
        }
        var part: String?
        var name: String
        var quantity: String
        var unit: String?
        var unitPrice: String?
        var currency: String?
        var total: String?
        var worker: Worker

        enum CodingKeys: String, CodingKey {
            case part, name, quantity, unit, currency, total, worker
            case unitPrice = "unit_price"
        }
    }

    struct Total: Decodable, Equatable {
        var currency: String
        var amount: String
    }

    /// A receiver on `port` verifying with `secrets`; its lines so far come from `lines()`.
    final class Receiver: @unchecked Sendable {
        let pid: pid_t
        let log: URL
        let port: Int

        init(port: Int, secrets: [String], folder: URL, extra: [String] = []) throws {
            self.port = port
            log = folder.appending(path: "hooks-\(port).jsonl")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            pid = try ChildProcess.spawn(
                [
                    "/usr/bin/env", "python3", WebhookTests.repository.appending(path: "scripts/webhook-receiver").path, "--port",
                    String(port),
                    "--log", log.path,
                ] + secrets.flatMap { ["--secret", $0] } + extra,
                standardOutput: folder.appending(path: "receiver-\(port).out").path,
                standardError: folder.appending(path: "receiver-\(port).out").path)
        }

        /// Returns once the receiver takes connections: a service that sends at once (it is told of
        /// new events) otherwise meets a receiver still starting, and its refused attempt is one the
        /// receiver never logged (seen in a full run: 4 attempts counted, 3 requests seen).
        func listening() async throws {
            guard try await eventually(within: .seconds(30), every: .milliseconds(50), { ServiceProcess.accepts(self.port) }) else {
                throw TeamworkError(.internal, "the webhook receiver did not listen on \(port) within 30 s")
            }
        }

        func lines() throws -> [Line] {
            try String(contentsOf: log, encoding: .utf8).split(separator: "\n").map {
                try JSONDecoder().decode(Line.self, from: Data($0.utf8))
            }
        }

        /// Every line so far, for a failure's message.
        func shown() -> String { (try? lines()).map { "\($0)" } ?? "no log" }

        /// The events taken, each id once (repeats dropped, as a receiver does).
        func taken() throws -> [Line] { try lines().filter { $0.answered == 204 && $0.`repeat` == false } }

        func stop() {
            kill(pid, SIGKILL)
            _ = try? ChildProcess.wait(pid)
        }
    }

    /// Events of a task reach the receiver signed as Standard Webhooks says (verified by the
    /// standardwebhooks package), each id once after the receiver drops repeats; a receiver that
    /// fails at first gets the same id again after a backoff; a rotated secret signs beside the new
    /// one; the delivery log says what happened. Then the service is killed while a receiver takes
    /// its time, and every event still arrives, each id once.
    @Test func taskEventsReachAReceiverSignedOnceEachThroughFailuresRotationAndAKilledService() async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "hooks-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let manager = ManagerTool(url)
            _ = try await manager.ok("person", "add", "--first", "Max", "--last", "Boss", "--email", "max@example.org", "--role", "manager")
            _ = try await manager.ok("person", "add", "--first", "Ann", "--last", "Field", "--email", "ann@example.org")
            _ = try await manager.ok("team", "add", "red", "--name", "Red")
            _ = try await manager.ok("team", "add-member", "red", "ann@example.org")
            let port = ServiceProcess.freePort()
            let hook = "http://127.0.0.1:\(port)/hooks"
            let refused = try await manager("webhook", "add", "--url", hook, "--event", "task.completed")
            #expect(
                refused.status == 65 && refused.errorLines.count == 1
                    && refused.stderr.contains("is refused: 127.0.0.1 is an address of this machine (--allow-private"), "\(refused.stderr)"
            )
            let badEvent = try await manager("webhook", "add", "--url", hook, "--event", "task.exploded", "--allow-private")
            #expect(badEvent.status == 65 && badEvent.errorLines.count == 1, "\(badEvent.stderr)")
            let made = try await manager(
                "webhook", "add", "--url", hook, "--event", "task.created", "--event", "task.assigned", "--event", "task.completed",
                "--allow-private")
            #expect(made.status == 0, "\(made.stderr)")
            let secret = made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(secret.hasPrefix("whsec_"))
            #expect(try await manager.ok("webhook", "list").contains(secret) == false, "the secret is shown once")

            let receiver = try Receiver(port: port, secrets: [secret], folder: folder, extra: ["--fail-first", "2"])
            defer { receiver.stop() }
            try await receiver.listening()
            let service = ServiceProcess.run(
                databaseURL: url.connectionString, replicas: folder.appending(path: "replicas"), log: folder.path + "/service.log")
            service.arguments += ["--webhooks-allow-private", "--webhook-retry", "0.2", "--webhook-timeout", "2"]
            try await service.start()
            defer { service.stopInBackground() }

            let task = try JSONOutput.decode(
                FieldTask.self,
                try await manager.ok("task", "create", "--title", "Meter", "--team", "red", "--assignee", "ann@example.org", "--json"))
            try await CentralStore.withStore(url) { store in
                try await store.connection.query(
                    "UPDATE tasks SET status = 'completed', completed_at = now(), completed_by = assignee_id WHERE id = \(task.id)",
                    logger: store.logger)
            }
            #expect(
                try await eventually(within: .seconds(30)) { try receiver.taken().count == 3 },
                "\(receiver.shown())\n\(service.logTail(20))")
            let taken = try receiver.taken()
            #expect(Set(taken.compactMap(\.type)) == ["task.created", "task.assigned", "task.completed"])
            #expect(taken.allSatisfy { $0.verified && $0.task == task.id && $0.signatures == 1 })
            #expect(Set(taken.compactMap(\.id)).count == 3)
            let refusedOnes = try receiver.lines().filter { $0.answered == 500 }
            #expect(
                refusedOnes.count == 2 && refusedOnes.allSatisfy { line in taken.contains { $0.id == line.id } }, "retried with the same id"
            )
            let log = try JSONOutput.decode([WebhookDelivery].self, try await manager.ok("webhook", "deliveries", "1", "--json"))
            #expect(log.count == 3 && log.allSatisfy { $0.state == .delivered })
            // Every attempt the log counts reached the receiver: two refused, three taken, and any that outlived the
            // sender's timeout on a loaded machine (taken late, then sent again as a repeat).
            let firstThree = Set(taken.compactMap(\.id))
            let requests = try receiver.lines().filter { $0.id.map(firstThree.contains) == true }.count
            #expect(log.map(\.attempts).reduce(0, +) == requests && requests >= 5, "attempts \(log.map(\.attempts)), \(receiver.shown())")

            // A rotated secret: both sign while they overlap; the old one still verifies.
            let rotated = try await manager.ok("webhook", "rotate", "1", "--actor", "max@example.org")
                .trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(rotated.hasPrefix("whsec_") && rotated != secret)
            // Who rotated it, and when, stays on the webhook.
            let hooks = try JSONOutput.decode([WebhookSubscription].self, try await manager.ok("webhook", "list", "--json"))
            let max = try await CentralStore.withStore(url) { try await $0.person(reference: "max@example.org").id }
            #expect(hooks.first?.rotatedBy == max && hooks.first?.rotatedAt != nil, "\(hooks)")
            let listed = try await manager.ok("webhook", "list")
            #expect(listed.contains("by Max Boss") && listed.contains("OLD SECRET SIGNS UNTIL"), "\(listed)")
            #expect(
                hooks.first.flatMap { hook in hook.previousUntil.flatMap { until in hook.rotatedAt.map { until > $0 } } } == true,
                "the old secret signs on after the rotation")
            _ = try await manager.ok("task", "create", "--title", "Second", "--team", "red", "--json")
            #expect(try await eventually(within: .seconds(30)) { try receiver.taken().count == 4 })
            #expect(try receiver.taken().last.map { $0.verified && $0.signatures == 2 && $0.type == "task.created" } == true)

            // A delivery replayed comes with its id: the receiver drops it as a repeat.
            #expect(try await manager.ok("webhook", "list").contains("active"))
            #expect(try await manager.ok("webhook", "replay", "1").contains("evt_"))
            #expect(
                try await eventually(within: .seconds(30)) { try receiver.lines().contains { $0.`repeat` == true && $0.answered == 204 } })
            #expect(try receiver.taken().count == 4)

            // The service dies while a slow receiver holds a delivery: after a restart it arrives, once.
            receiver.stop()
            let slowPort = ServiceProcess.freePort()
            _ = try await manager.ok("webhook", "pause", "1")
            let slowMade = try await manager(
                "webhook", "add", "--url", "http://127.0.0.1:\(slowPort)/hooks", "--event", "task.created", "--allow-private")
            let slowSecret = slowMade.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let slow = try Receiver(port: slowPort, secrets: [slowSecret], folder: folder, extra: ["--delay-first", "3"])
            defer { slow.stop() }
            try await slow.listening()
            for title in ["Third", "Fourth", "Fifth"] { _ = try await manager.ok("task", "create", "--title", title, "--team", "red") }
            // Killed while the receiver holds the first delivery (it says so as the request arrives).
            #expect(try await eventually(within: .seconds(20)) { try slow.lines().contains { $0.answered == 0 } }, "\(slow.shown())")
            #expect(try await service.stop(signal: SIGKILL) == 128 + SIGKILL)
            try await service.start()
            #expect(
                try await eventually(within: .seconds(45)) { try slow.taken().count == 3 }, "\(slow.shown())\n\(service.logTail(20))")
            #expect(Set(try slow.taken().compactMap(\.id)).count == 3, "each event once after repeats are dropped")
            #expect(try slow.lines().contains { $0.`repeat` == true }, "the delivery cut off by the kill came again: \(slow.shown())")
            #expect(try slow.taken().allSatisfy(\.verified))
            #expect(try await manager.ok("webhook", "list").contains("paused: paused by hand"))
            _ = try await manager.ok("webhook", "resume", "1")
            _ = try await manager.ok("webhook", "remove", "1")
            #expect(try await manager("webhook", "remove", "1").status == 67, "gone")
        }
    }

    /// What a job cost reaches billing: the parts and lines a worker recorded offline, taken in by
    /// the service, go out with the completion as `task.costed` (and inside `task.completed`),
    /// priced with the day's catalogue and totalled per currency, signed and verified by the
    /// standardwebhooks package.
    @Test func whatAJobCostReachesBillingAsPricedLinesWithTotalsSigned() async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "costs-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let manager = ManagerTool(url)
            _ = try await manager.ok("person", "add", "--first", "Ann", "--last", "Field", "--email", "ann@example.org")
            _ = try await manager.ok("team", "add", "red", "--name", "Red")
            _ = try await manager.ok("team", "add-member", "red", "ann@example.org")
            _ = try await manager.ok(
                "part", "add", "--code", "CBL-3", "--name", "Cable 3x2.5", "--unit", "m", "--price", "12.50", "--currency", "SEK")
            _ = try await manager.ok(
                "part", "add", "--code", "PUMP-1", "--name", "Pump", "--unit", "piece", "--price", "1200", "--currency", "EUR")
            let token = try await manager.ok("person", "token", "issue", "ann@example.org").trimmingCharacters(in: .whitespacesAndNewlines)
            let port = ServiceProcess.freePort()
            let made = try await manager(
                "webhook", "add", "--url", "http://127.0.0.1:\(port)/hooks", "--event", "task.costed", "--event", "task.completed",
                "--allow-private")
            #expect(made.status == 0, "\(made.stderr)")
            let receiver = try Receiver(
                port: port, secrets: [made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)], folder: folder)
            defer { receiver.stop() }
            try await receiver.listening()
            let service = ServiceProcess.run(
                databaseURL: url.connectionString, replicas: folder.appending(path: "replicas"), log: folder.path + "/service.log")
            service.arguments += ["--webhooks-allow-private", "--webhook-retry", "0.2"]
            try await service.start()
            defer { service.stopInBackground() }
            let task = try JSONOutput.decode(
                FieldTask.self,
                try await manager.ok("task", "create", "--title", "Pump house", "--team", "red", "--assignee", "ann@example.org", "--json"))
            let id = String(task.id)
            let ann = folder.appending(path: "ann")
            #expect(try await WorkerTool.run(ann, "login", "--server", service.url, "--token", token).status == 0)
            for arguments in [
                ["start", id], ["used", id, "CBL-3", "12.5"], ["used", id, "PUMP-1", "1"], ["used", id, "--line", "Sealant", "2"],
                ["time", id, "--travel", "--start", "\(RecentFriday.day)T07:40:00Z", "--end", "\(RecentFriday.day)T08:00:00Z"],
                ["complete", id, "--note", "pump replaced"],
            ] {
                let run = try await WorkerTool.run(ann, arguments)
                #expect(run.status == 0, "\(arguments): \(run.stderr)")
            }
            #expect(try await WorkerTool.run(ann, "sync").status == 0)
            #expect(
                try await eventually(within: .seconds(30)) { try receiver.taken().count == 2 },
                "\(receiver.shown())\n\(service.logTail(20))")
            // The master wrote one event of each for the task: no late repeat can follow (a count, not a wait).
            #expect(try await Self.events(url, task: task.id) == ["task.completed": 1, "task.costed": 1])
            let taken = try receiver.taken()
            #expect(taken.compactMap(\.type).sorted() == ["task.completed", "task.costed"], "\(receiver.shown())")
            #expect(taken.allSatisfy { $0.verified && $0.task == task.id })
            let annID = try await CentralStore.withStore(url) { try await $0.person(reference: "ann@example.org").id }
            let expected = [
                Cost(
                    part: "CBL-3", name: "Cable 3x2.5", quantity: "12.5", unit: "m", unitPrice: "12.5", currency: "SEK", total: "156.25",
                    worker: .init(id: annID, name: "Ann Field")),
                Cost(
                    part: "PUMP-1", name: "Pump", quantity: "1", unit: "piece", unitPrice: "1200", currency: "EUR", total: "1200.00",
                    worker: .init(id: annID, name: "Ann Field")),
                Cost(
                    part: nil, name: "Sealant", quantity: "2", unit: nil, unitPrice: nil, currency: nil, total: nil,
                    worker: .init(id: annID, name: "Ann Field")),
            ]
            for line in taken {
                #expect(line.materials == expected, "\(line.type ?? ""): \(line.materials ?? [])")
                #expect(line.totals == [Total(currency: "EUR", amount: "1200.00"), Total(currency: "SEK", amount: "156.25")])
                // The labour: her travel as she entered it, and her work from her start to her completion.
                let labour = try #require(line.labour, "\(line.type ?? "")")
                // (Her start and completion a second apart or in the same one: her work, if any length, is automatic.)
                #expect(labour.travelMinutes == 20 && labour.open == 0 && labour.entries.first?.kind == "travel", "\(labour)")
                #expect(
                    labour.entries.first
                        == .init(
                            kind: "travel", worker: .init(id: annID, name: "Ann Field"), startedAt: "\(RecentFriday.day)T07:40:00Z",
                            endedAt: "\(RecentFriday.day)T08:00:00Z", minutes: 20, source: "worker"))
                let work = labour.entries.filter { $0.kind == "work" }
                #expect(
                    work.count <= 1 && work.allSatisfy { $0.source == "auto" } && labour.workMinutes == work.map(\.minutes).reduce(0, +))
            }
            // A manager's correction of the finished job goes to billing again, as task.costed.
            _ = try await manager.ok("person", "add", "--first", "Max", "--last", "Boss", "--email", "max@example.org", "--role", "manager")
            _ = try await manager.ok("task", "used", id, "CBL-3", "10", "--actor", "max@example.org")
            #expect(try await eventually(within: .seconds(30)) { try receiver.taken().count == 3 }, "\(receiver.shown())")
            #expect(
                try await Self.events(url, task: task.id) == ["task.completed": 1, "task.costed": 2], "one task.costed for the correction")
            let again = try #require(try receiver.taken().last)
            #expect(again.type == "task.costed" && again.verified)
            #expect(again.materials?.first?.quantity == "10" && again.materials?.first?.total == "125.00")
            #expect(again.totals == [Total(currency: "EUR", amount: "1200.00"), Total(currency: "SEK", amount: "125.00")])
            // Time she enters after the job was done changes its cost too: billing hears again, once.
            #expect(
                try await WorkerTool.run(
                    ann, "time", id, "--start", "\(RecentFriday.day)T08:00:00Z", "--end", "\(RecentFriday.day)T09:30:00Z"
                ).status == 0)
            #expect(try await WorkerTool.run(ann, "sync").status == 0)
            #expect(try await eventually(within: .seconds(30)) { try receiver.taken().count == 4 }, "\(receiver.shown())")
            #expect(try await Self.events(url, task: task.id) == ["task.completed": 1, "task.costed": 3])
            let late = try #require(try receiver.taken().last)
            #expect(late.type == "task.costed" && late.verified && late.labour?.workMinutes == 90 && late.labour?.travelMinutes == 20)
        }
    }

    /// The outbox events of what a job cost (task.completed, task.costed) the master wrote for `task`, by type.
    static func events(_ url: DatabaseURL, task: Int64) async throws -> [String: Int] {
        try await CentralStore.withStore(url) { store in
            Dictionary(
                uniqueKeysWithValues: try await store.rows(
                    """
                    SELECT event, count(*)::int FROM outbox_events
                    WHERE task_id = \(task) AND event IN ('task.completed', 'task.costed') GROUP BY event
                    """
                ).map { try $0.decode((String, Int).self) })
        }
    }

    /// The service's resident memory now, in MB (from /proc).
    static func residentMB(_ pid: pid_t) -> Double? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return nil }
        return kilobytes / 1024
    }

    /// Seen on main: a receiver that answered with a body that never ends grew `run` from 50 MB to
    /// 1.1 GB in 25 s and held 6 connections open for one subscription. Here three subscriptions
    /// hear of 30 events from such a receiver: the service stays under 150 MB, never holds more
    /// connections out than one per subscription (its own count, on /metrics), and every event is
    /// delivered (its 200 is read).
    @Test func aReceiverWhoseAnswerNeverEndsCostsTheServiceLittleMemoryAndOneConnectionPerSubscription() async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "endless-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let manager = ManagerTool(url)
            _ = try await manager.ok("team", "add", "red", "--name", "Red")
            let port = ServiceProcess.freePort()
            var secrets: [String] = []
            for _ in 0..<3 {
                let made = try await manager.ok(
                    "webhook", "add", "--url", "http://127.0.0.1:\(port)/hooks", "--event", "task.created", "--allow-private")
                secrets.append(made.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            let receiver = try Receiver(port: port, secrets: secrets, folder: folder, extra: ["--endless"])
            defer { receiver.stop() }
            try await receiver.listening()
            let service = ServiceProcess.run(
                databaseURL: url.connectionString, replicas: folder.appending(path: "replicas"), log: folder.path + "/service.log")
            service.arguments += ["--egress-allow", "127.0.0.1", "--webhook-retry", "0.2", "--webhook-timeout", "2"]
            try await service.start()
            defer { service.stopInBackground() }
            for index in 0..<10 { _ = try await manager.ok("task", "create", "--title", "Job \(index)", "--team", "red") }
            var most = 0.0
            let delivered = try await eventually(within: .seconds(90), every: .milliseconds(200)) {
                most = max(most, Self.residentMB(service.pid) ?? 0)
                return try receiver.lines().filter { $0.answered == 200 }.count >= 30
            }
            #expect(delivered, "\(receiver.shown())\n\(service.logTail(20))")
            for _ in 0..<10 {
                most = max(most, Self.residentMB(service.pid) ?? 0)
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(most > 0 && most < 150, "the service's resident memory reached \(most) MB")
            // The service's own count (from before the lookup until the close is done): one per subscription.
            let metrics = try await LocalHTTP.request(port: service.port ?? 0, "/metrics", timeout: .seconds(5)).text
            let out = metrics.split(separator: "\n").first { $0.hasPrefix("teamwork_egress_connections_most ") }
                .flatMap { Double($0.split(separator: " ")[1]) }
            #expect(out.map { (1...3).contains(Int($0)) } == true, "the service held \(out ?? -1) connections out at once")
            // The receiver sees a closed connection a moment late (when its next write fails), and the next
            // delivery may open before: it may count one more per subscription, never the runaway seen on main.
            let connections = Int((try? String(contentsOf: receiver.log.appendingPathExtension("connections"), encoding: .utf8)) ?? "") ?? 0
            #expect((1...6).contains(connections), "the receiver held \(connections) connections at once")
        }
    }

    /// Seen on main: deliveries went in passes that each waited for their slowest, so a receiver
    /// taking its time (up to the 30 s deadline) held back every other subscription's events. Here
    /// one receiver holds its first delivery for a minute; another subscription hears of four
    /// tasks made meanwhile within a few seconds.
    @Test func aReceiverThatTakesItsTimeHoldsBackNoOtherSubscription() async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "slow-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let manager = ManagerTool(url)
            _ = try await manager.ok("team", "add", "red", "--name", "Red")
            let (slowPort, quickPort) = (ServiceProcess.freePort(), ServiceProcess.freePort())
            func subscribe(_ port: Int) async throws -> String {
                try await manager.ok(
                    "webhook", "add", "--url", "http://127.0.0.1:\(port)/hooks", "--event", "task.created", "--allow-private"
                ).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let slow = try Receiver(
                port: slowPort, secrets: [try await subscribe(slowPort)], folder: folder, extra: ["--delay-first", "60"])
            defer { slow.stop() }
            try await slow.listening()
            let quick = try Receiver(port: quickPort, secrets: [try await subscribe(quickPort)], folder: folder)
            defer { quick.stop() }
            try await quick.listening()
            let service = ServiceProcess.run(
                databaseURL: url.connectionString, replicas: folder.appending(path: "replicas"), log: folder.path + "/service.log")
            service.arguments += ["--egress-allow", "127.0.0.1", "--webhook-retry", "0.2", "--webhook-timeout", "30"]
            try await service.start()
            defer { service.stopInBackground() }
            _ = try await manager.ok("task", "create", "--title", "Job 0", "--team", "red")
            #expect(
                try await eventually(within: .seconds(20)) { try slow.lines().contains { $0.answered == 0 } && quick.taken().count == 1 },
                "\(slow.shown())\n\(quick.shown())")
            for index in 1...3 { _ = try await manager.ok("task", "create", "--title", "Job \(index)", "--team", "red") }
            // Well within the held delivery's 30 s.
            #expect(try await eventually(within: .seconds(10)) { try quick.taken().count == 4 }, "\(quick.shown())\n\(service.logTail(20))")
            #expect(try slow.lines().count == 1, "one at a time to the slow one: \(slow.shown())")
        }
    }
}
