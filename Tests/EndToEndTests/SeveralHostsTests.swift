import Foundation
import GRDB
import LocalPostgres
import TeamworkModel
import TeamworkTestSupport
import Testing
import WorkerClient

@testable import CentralStore

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 65: the field on more than one box. Two `teamwork-service run` hosts, each with a replica
/// folder of its own, behind one haproxy address, on a PostgreSQL primary with a synchronous
/// standby; six workers (the real binary, each with a device of their own) work and sync through
/// the proxy while one host is killed for good and, later, the primary is killed and the standby
/// promoted. Nothing a worker was told was accepted may be lost, doubled or drift.
@Suite("Several hosts behind one address", .serialized)
struct SeveralHostsTests {
    @Test func sixWorkersThroughAProxyLoseNothingWhenAHostIsKilledForGoodAndThePrimaryFailsOver() async throws {
        try await FailoverTests.withPair(synchronous: true) { pair, url in
            let base = FileManager.default.temporaryDirectory.appending(path: "hosts-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: base) }
            let jobs = 4
            let (world, plans) = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                var people = [world.ann, world.bo]
                for name in ["dee", "eve", "fay", "gus"] {
                    let person = try await store.addPerson(
                        try NewPerson(firstName: name, lastName: "Test", email: "\(name)@example.org", role: .worker))
                    try await store.addMember(teamID: world.red.id, personID: person.id)
                    people.append(person)
                }
                var plans: [ChaosTests.Plan] = []
                for person in people {
                    var steps: [[String]] = [["checkin", "--lat", "59.3", "--lon", "18.0"]]
                    for number in 1...jobs {
                        let task = try await store.createTask(
                            try world.task("\(person.firstName) job \(number)", team: world.red, assignee: person))
                        steps += [
                            ["start", String(task.id)], ["complete", String(task.id), "--note", "done \(task.id) by \(person.firstName)"],
                        ]
                    }
                    plans.append(
                        ChaosTests.Plan(
                            person: person, token: try await store.issueToken(personID: person.id, label: "").secret, steps: steps))
                }
                return (world, plans)
            }
            let folders = [base.appending(path: "a"), base.appending(path: "b")]
            let hosts = folders.enumerated().map { index, folder in
                ServiceProcess.run(databaseURL: url.connectionString, replicas: folder, log: base.path + "/host-\(index).log")
            }
            for host in hosts { try await host.start() }
            defer { for host in hosts where host.isRunning { host.stopInBackground() } }
            for folder in folders {
                try await expectEventually("\(folder.lastPathComponent) holds the team's tasks", within: .seconds(30)) {
                    await SeveralInstancesTests.replicaHolds("gus job \(jobs)", folder: folder, team: world.red)
                }
            }
            try await ProxyServer.with(hosts: hosts.map { $0.port! }) { address in
                for plan in plans {
                    let home = base.appending(path: plan.person.firstName)
                    let login = try await WorkerTool.run(home, ["login", "--server", address, "--token", plan.token])
                    #expect(login.status == 0, "\(login.stderr)")
                }
                let total = plans.reduce(0) { $0 + $1.steps.count }
                let syncs = Locked<[Int32: Int]>([:])
                let badExits = Locked<[String]>([])
                let workers = plans.enumerated().map { index, plan in
                    ChaosTests.thread {
                        var random = SplitMix(seed: UInt64(index + 7))
                        let home = base.appending(path: plan.person.firstName)
                        for step in plan.steps {
                            if let action = try? WorkerTool.runBlocking(home, step), action.status != 0 {
                                badExits.mutate { $0.append("\(plan.person.firstName) \(step[0]): \(action.status) \(action.stderr)") }
                            }
                            let sync = try? WorkerTool.runBlocking(home, ["sync", "--timeout", "5", "--connect-timeout", "1"])
                            if let sync { syncs.mutate { $0[sync.status, default: 0] += 1 } }
                            if let sync, ![0, 69].contains(sync.status) {
                                badExits.mutate { $0.append("\(plan.person.firstName) sync: \(sync.status) \(sync.stderr)") }
                            }
                            usleep(UInt32(300_000 + random.next(500_000)))
                        }
                    }
                }
                // A third of the day in, host A dies for good; two thirds in, so does the primary.
                func ledger() async -> Int {
                    (try? await CentralStore.withStore(url) {
                        try await $0.rows("SELECT count(*)::int FROM field_changes")[0].decode(Int.self)
                    })
                        ?? 0
                }
                _ = try await eventually(within: .seconds(120), every: .milliseconds(200)) { await ledger() >= total / 3 }
                _ = try await hosts[0].stop(signal: SIGKILL)
                _ = try await eventually(within: .seconds(120), every: .milliseconds(200)) { await ledger() >= total * 2 / 3 }
                try await blockingWork { try pair.killPrimary() }
                try await blockingWork { try pair.promoteStandby() }
                try await ChaosTests.until(workers)
                #expect(badExits.value.isEmpty, "\(badExits.value)")

                // Calm again: every device sends what it holds until nothing is queued or unconfirmed.
                var accepted: [(person: Int64, change: String, operation: String, task: Int64?, note: String?)] = []
                for plan in plans {
                    let home = base.appending(path: plan.person.firstName)
                    var status = ""
                    for _ in 0..<40 {
                        _ = try await WorkerTool.run(home, ["sync"])
                        status = try await WorkerTool.run(home, ["status"]).stdout
                        if status.contains("Queued: 0 ") && !status.contains("not yet confirmed") { break }
                        try await Task.sleep(for: .milliseconds(500))
                    }
                    #expect(status.contains("Queued: 0 ") && !status.contains("not yet confirmed"), "\(plan.person.firstName): \(status)")
                    accepted += try ChaosTests.outbox(home, states: ["accepted"]).map { (plan.person.id, $0[0], $0[1], $0[2], $0[3]) }
                }
                #expect(accepted.count == total, "every change of the day accepted: \(accepted.count) of \(total); syncs \(syncs.value)")
                let (ledger, history, tasks) = try await CentralStore.withStore(url) { store in
                    var ledger: [String: Int] = [:]
                    for row in try await store.rows("SELECT person_id || '/' || change_id, count(*)::int FROM field_changes GROUP BY 1") {
                        let (key, count) = try row.decode((String, Int).self)
                        ledger[key] = count
                    }
                    var history: [String: Int] = [:]
                    for row in try await store.rows(
                        "SELECT field_change_id, count(*)::int FROM task_history WHERE field_change_id IS NOT NULL GROUP BY 1")
                    {
                        let (id, count) = try row.decode((String, Int).self)
                        history[id] = count
                    }
                    return (ledger, history, try await store.listTasks())
                }
                #expect(ledger.count == total && ledger.values.allSatisfy { $0 == 1 }, "each change once in the ledger")
                for change in accepted where change.operation == "complete" {
                    #expect(history[change.change] == 1, "completion \(change.change) once in the history")
                    let task = try #require(tasks.first { $0.id == change.task })
                    #expect(task.status == .completed && task.completionNote == change.note && task.completedBy == change.person)
                }
                // The survivor's replicas agree with the new primary, and so does every device.
                try await expectEventually("verify is clean for host B", within: .seconds(60)) {
                    try await Tool.service.run(["verify", "--database-url", url.connectionString, "--replicas", folders[1].path]).status
                        == 0
                }
                for plan in plans {
                    let home = base.appending(path: plan.person.firstName)
                    let onDevice = try JSONOutput.decode(
                        [LocalTask].self, try await WorkerTool.run(home, ["tasks", "--all", "--json"]).stdout)
                    for task in onDevice {
                        let truth = try #require(tasks.first { $0.id == task.id })
                        #expect(
                            task.status == truth.status && task.completionNote == truth.completionNote
                                && task.assigneeID == truth.assigneeID,
                            "\(plan.person.firstName)'s device holds task \(task.id) as the master does")
                    }
                }
                #expect(hosts[1].isRunning, "the surviving host carried the field")
                for index in 0..<2 {
                    let log = (try? String(contentsOfFile: base.path + "/host-\(index).log", encoding: .utf8)) ?? ""
                    for sign in ["Assertion failed", "Fatal error", "Program crashed"] {
                        #expect(!log.contains(sign), "host \(index): \(sign)")
                    }
                }
            }
        }
    }

    /// Both hosts run the outbox's senders, woken by the same notification and claiming at once:
    /// a flood of events reaches a Standard Webhooks receiver (verified by the standardwebhooks
    /// package) with each event sent once, not once per host.
    @Test func twoHostsClaimingTheOutboxAtOnceSendEachWebhookOnceUnderAFlood() async throws {
        // Two services and a flood: never beside the other heavy tests (MachineAlone).
        try await MachineAlone.run { try await Self.webhookFlood() }
    }

    static func webhookFlood() async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "two-hooks-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let manager = ManagerTool(url)
            _ = try await manager.ok("team", "add", "red", "--name", "Red")
            let port = ServiceProcess.freePort()
            let made = try await manager(
                "webhook", "add", "--url", "http://127.0.0.1:\(port)/hooks", "--event", "task.created", "--allow-private")
            #expect(made.status == 0, "\(made.stderr)")
            let receiver = try WebhookTests.Receiver(
                port: port, secrets: [made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)], folder: folder)
            defer { receiver.stop() }
            try await receiver.listening()
            let hosts = ["a", "b"].map { name in
                let host = ServiceProcess.run(
                    databaseURL: url.connectionString, replicas: folder.appending(path: name), log: folder.path + "/\(name).log")
                host.arguments += ["--webhooks-allow-private", "--webhook-retry", "0.2", "--webhook-timeout", "20"]
                return host
            }
            for host in hosts { try await host.start() }
            defer { for host in hosts where host.isRunning { host.stopInBackground() } }

            let flood = 300
            try await CentralStore.withStore(url) { store in
                let team = try await store.team(reference: "red")
                for number in 1...flood {
                    _ = try await store.createTask(
                        try NewTask(title: "flood \(number)", assignment: try Assignment(teamID: team.id, assigneeID: nil)))
                }
            }
            let arrived = try await eventually(within: .seconds(90)) { try receiver.taken().count == flood }
            if !arrived {
                Issue.record("\(try receiver.taken().count) of \(flood) taken\n\(hosts[0].logTail(10))\n\(hosts[1].logTail(10))")
            }
            let lines = try receiver.lines()
            #expect(lines.count == flood, "each event sent once, not once per host: \(lines.count) requests for \(flood) events")
            #expect(Set(lines.compactMap(\.id)).count == flood && lines.allSatisfy { $0.verified && $0.`repeat` == false })
            let attempts = try await CentralStore.withStore(url) { store in
                try await store.rows("SELECT count(*)::int, sum(attempts)::int FROM webhook_deliveries WHERE state = 'delivered'")[0]
                    .decode((Int, Int).self)
            }
            #expect(attempts.0 == flood && attempts.1 == flood, "delivered once each: \(attempts)")
        }
    }

    /// Texts too: both hosts run the customer messages' sender on one master; a visit booked for
    /// each of 60 customers is texted to each once (the SMS endpoint verifies each request's
    /// signature with the standardwebhooks package), not once per host.
    @Test func twoHostsSendingCustomerTextsAtOnceTextEachBookingOnce() async throws {
        try await MachineAlone.run { try await Self.textFlood() }
    }

    static func textFlood() async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "two-texts-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let secret = "whsec_" + Data((0..<24).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            let port = ServiceProcess.freePort()
            let receiver = try WebhookTests.Receiver(port: port, secrets: [secret], folder: folder)
            defer { receiver.stop() }
            try await receiver.listening()
            let hosts = ["a", "b"].map { name in
                let host = ServiceProcess.run(
                    databaseURL: url.connectionString, replicas: folder.appending(path: name), log: folder.path + "/\(name).log")
                host.arguments += ["--sms-url", "http://127.0.0.1:\(port)/sms", "--webhooks-allow-private", "--message-retry", "0.2"]
                host.environment["TEAMWORK_SMS_SECRET"] = secret
                return host
            }
            for host in hosts { try await host.start() }
            defer { for host in hosts where host.isRunning { host.stopInBackground() } }

            let customers = 60
            try await CentralStore.withStore(url) { store in
                let team = try await store.addTeam(try NewTeam(slug: "red", name: "Red"))
                // A visit the day after tomorrow: booked now, no reminder or "on the way" yet, whatever the hour.
                let start = Date().addingTimeInterval(2 * 86_400)
                for number in 1...customers {
                    let customer = try await store.addCustomer(
                        try NewCustomer(name: "Customer \(number)", phone: "+46 70 \(100 + number) 00 00", consent: true))
                    let task = try NewTask(
                        title: "Visit \(number)", assignment: try Assignment(teamID: team.id, assigneeID: nil),
                        window: try TimeWindow(start: start, end: start.addingTimeInterval(3600)), customerID: customer.id)
                    _ = try await store.createTask(task)
                }
            }
            let arrived = try await eventually(within: .seconds(90)) { try receiver.taken().count >= customers }
            if !arrived { Issue.record("\(try receiver.taken().count) of \(customers) texts\n\(hosts[0].logTail(10))") }
            // Every message recorded as sent by the master: no host holds one in flight that could still go again.
            let settled = try await eventually(within: .seconds(30)) {
                try await CentralStore.withStore(url) { store in
                    try await store.rows("SELECT count(*)::int FROM customer_messages WHERE state = 'pending'")[0].decode(Int.self) == 0
                }
            }
            #expect(settled, "every text recorded as sent")
            let lines = try receiver.lines()
            #expect(lines.count == customers, "each booking texted once, not once per host: \(lines.count) requests for \(customers)")
            #expect(Set(lines.compactMap(\.to)).count == customers && lines.allSatisfy { $0.verified && $0.`repeat` == false })
        }
    }
}
