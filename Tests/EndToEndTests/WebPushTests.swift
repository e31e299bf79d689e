import Crypto
import Foundation
import LocalPostgres
import PostgresNIO
import TeamworkModel
import TeamworkTestSupport
import Testing
import WebPush

@testable import CentralStore
@testable import Outbox

/// Web Push to the phones (docs/phone.md, "Notifications"): the message format against RFC 8291's
/// own example, and the service's pushes taken by a push service of the test's own built on
/// http_ece and py_vapid (scripts/push-receiver; nobody here wrote them), which decrypts every
/// message and verifies every VAPID token.
@Suite("Web Push")
struct WebPushTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// RFC 8291, appendix A: with the example's keys and salt, the message is the example's, byte for byte.
    @Test func aMessageIsEncryptedExactlyAsRFC8291sExample() throws {
        func bytes(_ text: String) -> Data { WebPush.data(base64URL: text)! }
        let sender = try P256.KeyAgreement.PrivateKey(rawRepresentation: bytes("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"))
        let keys = try #require(
            WebPush.Keys(
                p256dh: bytes("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"),
                auth: bytes("BTBZMqHH6r4Tts7J_aSIgg")))
        let message = try WebPush.encrypt(
            Data("When I grow up, I want to be a watermelon".utf8), for: keys, salt: bytes("DGv6ra1nlYgDCS1FRnbzlw"), senderKey: sender)
        #expect(
            WebPush.base64URL(message)
                == "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
        )
        #expect(WebPush.Keys(p256dh: Data(repeating: 4, count: 65), auth: Data(count: 16)) == nil, "not a point on P-256")
        #expect(throws: WebPushError.self) { try WebPush.encrypt(Data(count: WebPush.maximumPayload + 1), for: keys) }
    }

    /// The push service's stand-in: its subscription, and one line per request it took.
    struct Receiver {
        struct Line: Decodable {
            struct Claims: Decodable {
                var aud: String
                var exp: Int
                var sub: String
            }

            struct Payload: Decodable {
                struct News: Decodable, Equatable {
                    var kind: String
                    var task: Int64
                    /// When the task last changed (ms): not compared.
                    var at: Int64? = nil

                    init(kind: String, task: Int64) { (self.kind, self.task) = (kind, task) }
                    static func == (a: News, b: News) -> Bool { a.kind == b.kind && a.task == b.task }
                }

                var v: Int
                var news: [News]
            }

            var verified: Bool
            var decrypted: Bool
            var claims: Claims?
            var key: String?
            var payload: Payload?
            var ttl: String?
            var urgency: String?
            var answered: Int
            var problem: String?
        }

        let port: Int
        let pid: Int32
        let log: URL
        let subscriptionFile: URL

        init(folder: URL, extra: [String] = []) throws {
            port = ServiceProcess.freePort()
            log = folder.appending(path: "pushes-\(port).jsonl")
            subscriptionFile = folder.appending(path: "subscription-\(port).json")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            pid = try ChildProcess.spawn(
                [
                    "/usr/bin/env", "python3", WebPushTests.repository.appending(path: "scripts/push-receiver").path, "--port",
                    String(port),
                    "--subscription", subscriptionFile.path, "--log", log.path,
                ] + extra,
                standardOutput: folder.appending(path: "push-receiver-\(port).out").path,
                standardError: folder.appending(path: "push-receiver-\(port).out").path)
        }

        /// The subscription as a browser gives it, once the receiver takes connections.
        func subscription() async throws -> Data {
            guard
                try await eventually(
                    within: .seconds(30), every: .milliseconds(50),
                    {
                        ServiceProcess.accepts(self.port) && FileManager.default.fileExists(atPath: self.subscriptionFile.path)
                    })
            else { throw TeamworkError(.internal, "the push receiver did not start on \(port) within 30 s") }
            return try Data(contentsOf: subscriptionFile)
        }

        func lines() throws -> [Line] {
            try String(contentsOf: log, encoding: .utf8).split(separator: "\n").map {
                try JSONDecoder().decode(Line.self, from: Data($0.utf8))
            }
        }

        func shown() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "no log" }

        func stop() {
            kill(pid, SIGKILL)
            _ = try? ChildProcess.wait(pid)
        }
    }

    /// A worker's phone subscribes; work assigned to the worker, work of theirs moved, and work
    /// taken from them reach the push service as the RFCs say (decrypted by http_ece, the VAPID token
    /// verified by py_vapid against the key the service gives phones), naming the task and what
    /// happened and nothing of what the task says; several happenings while one waits go as one
    /// push. A push service that answers 429 is tried again; one that answers 410 ends the
    /// subscription, and nothing more is queued for that phone. A revoked token's subscription goes.
    @Test func workAssignedToAWorkerReachesTheirPushServiceEncryptedAndSignedThenEndsWithTheSubscription() async throws {
        try await MachineAlone.run {
            try await TestDatabase.withFresh { url in
                let folder = FileManager.default.temporaryDirectory.appending(path: "push-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: folder) }
                let manager = ManagerTool(url)
                _ = try await manager.ok("person", "add", "--first", "Ann", "--last", "Field", "--email", "ann@example.org")
                _ = try await manager.ok("person", "add", "--first", "Bo", "--last", "Other", "--email", "bo@example.org")
                _ = try await manager.ok("team", "add", "red", "--name", "Red")
                _ = try await manager.ok("team", "add-member", "red", "ann@example.org")
                _ = try await manager.ok("team", "add-member", "red", "bo@example.org")
                let token = try await manager.ok("person", "token", "issue", "ann@example.org", "--label", "phone")
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                let receiver = try Receiver(folder: folder, extra: ["--fail-first", "1"])
                defer { receiver.stop() }
                let subscription = try await receiver.subscription()

                let service = ServiceProcess.run(
                    databaseURL: url.connectionString, replicas: folder.appending(path: "replicas"), log: folder.path + "/service.log")
                service.arguments += ["--webhook-retry", "0.2", "--webhook-timeout", "2"]
                // A push service of the test's own, on this machine's loopback: allowed for pushes alone.
                service.environment["TEAMWORK_PUSH_ALLOW_PRIVATE"] = "1"
                try await service.start()
                defer { service.stopInBackground() }
                let port = try #require(service.port)
                let auth = ["Authorization": "Bearer \(token)"]

                // Bad subscriptions are refused and keep nothing.
                #expect(try await LocalHTTP.request(.put, port: port, "/v1/push", body: subscription).status == 401)
                let notHTTPS = Data(#"{"endpoint":"http://push.example.org/x","keys":{"p256dh":"AAAA","auth":"AAAA"}}"#.utf8)
                #expect(try await LocalHTTP.request(.put, port: port, "/v1/push", headers: auth, body: notHTTPS).status == 422)
                let badKeys = Data(#"{"endpoint":"https://push.example.org/x","keys":{"p256dh":"AAAA","auth":"AAAA"}}"#.utf8)
                #expect(try await LocalHTTP.request(.put, port: port, "/v1/push", headers: auth, body: badKeys).status == 422)
                #expect(try await LocalHTTP.request(.put, port: port, "/v1/push", headers: auth, body: Data("[1,".utf8)).status == 400)
                let huge = Data(#"{"endpoint":"https://push.example.org/\#(String(repeating: "x", count: 5000))"}"#.utf8)
                #expect(try await LocalHTTP.request(.put, port: port, "/v1/push", headers: auth, body: huge).status == 413)
                let kept = { try await CentralStore.withStore(url) { try await $0.pendingPushes() } }
                #expect(try await Self.subscriptions(url) == 0)

                let key = try await LocalHTTP.request(port: port, "/v1/push", headers: auth)
                #expect(key.status == 200, "\(key.text)")
                let publicKey = try #require(
                    (try JSONSerialization.jsonObject(with: key.body) as? [String: String])?["public_key"], "\(key.text)")
                #expect(WebPush.data(base64URL: publicKey)?.count == 65)
                #expect(try await LocalHTTP.request(.put, port: port, "/v1/push", headers: auth, body: subscription).status == 204)
                #expect(try await Self.subscriptions(url) == 1)
                // A phone (or a stolen token) flooding it: each is one statement within the person's own limit; one subscription stays.
                let flood = try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<40 {
                        group.addTask {
                            try await LocalHTTP.request(.put, port: port, "/v1/push", headers: auth, body: subscription).status
                        }
                    }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
                #expect(Set(flood).isSubset(of: [204, 429]) && flood.contains(204), "\(flood)")
                #expect(try await Self.subscriptions(url) == 1)

                // Assigned to Ann: pushed (after one 429), naming the task only.
                let task = try JSONOutput.decode(
                    FieldTask.self,
                    try await manager.ok(
                        "task", "create", "--title", "Secret customer address", "--team", "red", "--assignee", "ann@example.org", "--json"))
                #expect(
                    try await eventually(within: .seconds(30)) { try receiver.lines().contains { $0.answered == 201 } },
                    "\(receiver.shown())\n\(service.logTail(20))")
                let first = try receiver.lines()
                #expect(first.first?.answered == 429, "the first answer was 429: \(receiver.shown())")
                let taken = try #require(first.last)
                #expect(taken.verified && taken.decrypted && taken.problem == nil, "\(receiver.shown())")
                #expect(taken.key == publicKey, "signed with the key phones subscribe with")
                #expect(taken.payload?.news == [.init(kind: "assigned", task: task.id)])
                // With when the task last changed, for the phone to wait for a copy that recent.
                let changedAt = try await CentralStore.withStore(url) { try await $0.task(id: task.id).updatedAt.millisecondsSince1970 }
                #expect(taken.payload?.news.first?.at.map { abs($0 - changedAt) <= 1 } == true, "\(taken.payload?.news ?? [])")
                #expect(taken.claims?.sub.hasPrefix("mailto:") == true && taken.urgency == "high" && taken.ttl == "86400")
                #expect(!receiver.shown().contains("Secret"), "nothing of what the task says")
                #expect(try await kept() == 0)

                // Moved, then taken from her and given back: one push may tell of several happenings.
                _ = try await manager.ok("task", "update", String(task.id), "--due", "2030-01-02T10:00:00Z")
                #expect(
                    try await eventually(within: .seconds(30)) {
                        try receiver.lines().contains { $0.payload?.news.contains(.init(kind: "changed", task: task.id)) == true }
                    }, "\(receiver.shown())\n\(service.logTail(20))")
                // Given to Bo: Ann hears it is no longer hers (Bo has no phone subscribed).
                _ = try await manager.ok("task", "assign", String(task.id), "--assignee", "bo@example.org")
                #expect(
                    try await eventually(within: .seconds(30)) {
                        try receiver.lines().contains { $0.payload?.news == [.init(kind: "taken", task: task.id)] }
                    }, "\(receiver.shown())\n\(service.logTail(20))")

                // The push service says the subscription is gone: it goes, and nothing more is queued for it.
                receiver.stop()
                let gone = try Receiver(folder: folder, extra: ["--gone"])
                defer { gone.stop() }
                #expect(
                    try await LocalHTTP.request(.put, port: port, "/v1/push", headers: auth, body: try await gone.subscription()).status
                        == 204)
                _ = try await manager.ok("task", "assign", String(task.id), "--assignee", "ann@example.org")
                #expect(
                    try await eventually(within: .seconds(30)) { try await Self.subscriptions(url) == 0 },
                    "\(gone.shown())\n\(service.logTail(20))")
                #expect(try gone.lines().map(\.answered) == [410])
                _ = try await manager.ok("task", "update", String(task.id), "--due", "2030-01-03T10:00:00Z")
                #expect(try await kept() == 0)

                // Subscribed again, then the token revoked: the subscription goes with it.
                #expect(try await LocalHTTP.request(.put, port: port, "/v1/push", headers: auth, body: subscription).status == 204)
                #expect(try await LocalHTTP.request(.delete, port: port, "/v1/push", headers: auth).status == 204)
                #expect(try await Self.subscriptions(url) == 0, "turned off by the phone")
                #expect(try await LocalHTTP.request(.put, port: port, "/v1/push", headers: auth, body: subscription).status == 204)
                let tokens = try await manager.ok("person", "token", "list", "--json")
                let id = try #require(
                    (try JSONSerialization.jsonObject(with: Data(tokens.utf8)) as? [[String: Any]])?.first {
                        $0["label"] as? String == "phone"
                    }?[
                        "id"] as? Int)
                _ = try await manager.ok("person", "token", "revoke", String(id))
                #expect(try await Self.subscriptions(url) == 0, "revoked with its token")
            }
        }
    }

    /// What the master queues for a subscribed phone: a refused change and a dispatcher's decision
    /// on one set aside (a check-in is not news), a cancellation; a happening that waits already is
    /// not queued twice; at the claim, news of work that is no longer the person's and messages a
    /// day old are dropped; a claim holds one phone's messages as one push.
    @Test func theMasterQueuesEachHappeningOnceForTheWorkersPhoneAndDropsWhatNoLongerNeedsSaying() async throws {
        try await TestDatabase.withFresh { url in
            let manager = ManagerTool(url)
            _ = try await manager.ok("person", "add", "--first", "Ann", "--last", "Field", "--email", "ann@example.org")
            _ = try await manager.ok("person", "add", "--first", "Bo", "--last", "Other", "--email", "bo@example.org")
            _ = try await manager.ok("team", "add", "red", "--name", "Red")
            _ = try await manager.ok("team", "add-member", "red", "ann@example.org")
            _ = try await manager.ok("team", "add-member", "red", "bo@example.org")
            let token = try await manager.ok("person", "token", "issue", "ann@example.org", "--label", "phone")
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let one = try JSONOutput.decode(
                FieldTask.self,
                try await manager.ok("task", "create", "--title", "One", "--team", "red", "--assignee", "ann@example.org", "--json"))
            let two = try JSONOutput.decode(
                FieldTask.self,
                try await manager.ok("task", "create", "--title", "Two", "--team", "red", "--assignee", "ann@example.org", "--json"))
            try await CentralStore.withStore(url) { store in
                func run(_ sql: String) async throws {
                    _ = try await store.connection.query(PostgresQuery(unsafeSQL: sql), logger: store.logger).collect()
                }
                func queued() async throws -> [String] {
                    try await store.connection.query(
                        "SELECT kind || ':' || task_id FROM push_messages ORDER BY id", logger: store.logger
                    ).collect().map { try $0.decode(String.self) }
                }
                #expect(try await queued().isEmpty, "nothing is queued for a phone that never subscribed")
                let p256dh = Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation)
                #expect(
                    try await store.setPushSubscription(
                        secret: token, endpoint: "https://push.example.org/a", p256dh: p256dh, auth: Array(repeating: 7, count: 16)))
                #expect(
                    try await !store.setPushSubscription(
                        secret: TokenSecret.generate(), endpoint: "https://push.example.org/b", p256dh: p256dh,
                        auth: Array(repeating: 7, count: 16)), "an unknown token keeps nothing")
                let ann = try await store.person(reference: "ann@example.org").id
                func change(_ id: String, task: Int64, operation: String, applied: Bool, conflict: String?) async throws {
                    try await run(
                        """
                        INSERT INTO field_changes (replica, position, change_id, person_id, task_id, operation, made_at, received_at,
                                                   applied, conflict)
                        VALUES ('team-1', 1, '\(id)', \(ann), \(task), '\(operation)', now(), now(), \(applied),
                                \(conflict.map { "'\($0)'" } ?? "NULL"))
                        """)
                }
                try await change("c1", task: one.id, operation: "claim", applied: false, conflict: "claimed_by_other")
                try await change("c2", task: one.id, operation: "checkin", applied: false, conflict: "invalid")
                try await change("c3", task: two.id, operation: "start", applied: true, conflict: nil)
                #expect(try await queued() == ["refused:\(one.id)"])
                try await run("UPDATE field_changes SET resolved_at = now(), resolution = 'dismissed' WHERE change_id IN ('c1', 'c2')")
                try await run("UPDATE tasks SET priority = 'high' WHERE id = \(two.id)")
                try await run("UPDATE tasks SET title = 'Two again' WHERE id = \(two.id)")
                try await run("UPDATE tasks SET status = 'cancelled' WHERE id = \(one.id)")
                #expect(
                    try await queued() == ["refused:\(one.id)", "decided:\(one.id)", "changed:\(two.id)", "changed:\(one.id)"],
                    "each happening once while it waits")
                // Two given to Bo before it went: the news of its change is no longer Ann's, and she hears it was taken
                // from her. A day-old message is dropped too.
                try await run("UPDATE tasks SET assignee_id = (SELECT id FROM people WHERE email = 'bo@example.org') WHERE id = \(two.id)")
                try await run("UPDATE push_messages SET queued_at = now() - interval '25 hours' WHERE kind = 'decided'")
                let claimed = try await store.claimDuePushes(limit: 10, perPhone: 50, lease: .seconds(30))
                #expect(claimed.count == 1, "one push for the phone")
                #expect(
                    claimed.first.map { $0.messages.map { "\($0.kind):\($0.taskID)" } } == [
                        "refused:\(one.id)", "changed:\(one.id)", "taken:\(two.id)",
                    ])
                // The same news again while the push is in flight: it is not lost with the push, and nothing more
                // goes to the phone until the push in flight is recorded.
                try await run("UPDATE tasks SET status = 'open', assignee_id = NULL WHERE id = \(one.id)")
                try await run("UPDATE field_changes SET resolved_at = NULL WHERE change_id = 'c1'")
                try await change("c4", task: one.id, operation: "claim", applied: false, conflict: "claimed_by_other")
                #expect(
                    try await store.claimDuePushes(limit: 10, perPhone: 50, lease: .seconds(30)).isEmpty, "one push in flight per phone")
                try await store.recordPush(try #require(claimed.first), outcome: .sent)
                #expect(try await queued() == ["refused:\(one.id)"], "sent with the news that came again still due")
                // A push service saying an old subscription is gone leaves the one the phone renewed to.
                let again = try #require(try await store.claimDuePushes(limit: 10, perPhone: 50, lease: .seconds(30)).first)
                #expect(
                    try await store.setPushSubscription(
                        secret: token, endpoint: "https://push.example.org/renewed", p256dh: p256dh, auth: Array(repeating: 7, count: 16)))
                try await store.recordPush(again, outcome: .gone(reason: "HTTP 410"))
                #expect(try await Self.subscriptions(url) == 1, "the renewed subscription stays")
            }
        }
    }

    static func subscriptions(_ url: DatabaseURL) async throws -> Int {
        try await CentralStore.withStore(url) { store in
            try await store.connection.query("SELECT count(*) FROM push_subscriptions", logger: store.logger).collect()[0].decode(Int.self)
        }
    }
}
