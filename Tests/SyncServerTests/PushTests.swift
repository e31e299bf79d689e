import EventListener
import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import ReplicaGenerator
import SyncServer
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

@Suite("Sync endpoint: pushes")
struct PushTests {
    let server = SyncServerTests()

    struct Results: Decodable {
        var results: [WorkerChangeResult]
        var accepted: Int
        var rejected: Int
    }

    static func change(_ id: String, _ operation: String, task: Int64?, note: String? = nil, extra: String = "") -> String {
        var fields = ["\"id\": \"\(id)\"", "\"operation\": \"\(operation)\"", "\"made_at\": \"2026-11-21T10:00:00Z\""]
        if let task { fields.append("\"task_id\": \(task)") }
        if let note { fields.append("\"note\": \"\(note)\"") }
        if !extra.isEmpty { fields.append(extra) }
        return "{" + fields.joined(separator: ", ") + "}"
    }

    static func body(_ changes: String...) -> String { "{\"changes\": [\(changes.joined(separator: ", "))]}" }

    func pending(_ world: SyncServerTests.World, _ replica: ReplicaID) throws -> Int {
        try ReplicaContents.read(path: world.folder.appending(path: replica.fileName).path).acceptedWorkerChanges
    }

    @Test func aCompletionIsAcceptedShownToTeammatesAndAppliedOnceWhenRetried() async throws {
        try await server.withServer { world, client in
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            let push = Self.body(Self.change("c-1", "complete", task: world.redTask, note: "meter swapped, serial 4411"))
            let first = try SyncServerTests.decode(
                Results.self, try await SyncServerTests.post(client, uri, token: world.annToken, body: push))
            #expect(first.accepted == 1 && first.results[0].duplicate == false)
            let retry = try SyncServerTests.decode(
                Results.self, try await SyncServerTests.post(client, uri, token: world.annToken, body: push))
            #expect(retry.accepted == 1 && retry.results[0].duplicate == true)
            #expect(try pending(world, .team(world.fixtures.red.id)) == 1)

            // Bo pulls the team and sees Ann's completion.
            let boToken = try await CentralStore.withStore(world.url) {
                try await $0.issueToken(personID: world.fixtures.bo.id, label: "").secret
            }
            let page = try SyncServerTests.decode(ChangePage.self, try await SyncServerTests.get(client, uri, token: boToken))
            let task = try #require(page.tasks.first { $0.id == world.redTask })
            #expect(
                task.status == .completed && task.completionNote == "meter swapped, serial 4411"
                    && task.completedBy == world.fixtures.ann.id)
        }
    }

    /// Issue 65: a change sent again (`"resent": true`) that the master's ledger holds is answered
    /// settled and not taken again; one it does not hold is taken like any push. A flood of pushes
    /// sent again, 24 at once, asks the master one at a time and leaves the endpoint's connections
    /// free: a device never seen before signs in meanwhile; every push is answered.
    @Test func changesSentAgainAreSettledFromTheLedgerAndAFloodOfThemLeavesTokenChecksTheirConnections() async throws {
        try await server.withServer(.live) { world, client in
            let port = try #require(client.port)
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            let change = Self.change("sent-1", "complete", task: world.redTask, note: "done")
            func post(_ body: String, token: String) async throws -> (Int, Results?) {
                let answer = try await LocalHTTP.request(
                    .post, port: port, uri, headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
                    body: Data(body.utf8), timeout: .seconds(60))
                return (answer.status, try? JSONDecoder().decode(Results.self, from: answer.body))
            }
            let resent = "{\"changes\": [\(change)], \"resent\": true}"
            // Not in the ledger yet: taken again like any push (a duplicate in this replica).
            #expect(try await post(Self.body(change), token: world.annToken).1?.accepted == 1)
            let early = try await post(resent, token: world.annToken).1
            #expect(early?.results.first?.settled == nil && early?.results.first?.duplicate == true, "\(String(describing: early))")
            // The listener takes it in; sent again now, it is settled, and nothing more is written.
            _ = try await EventListener(.init(databaseURL: world.url, directory: world.folder)).once()
            let written = try pending(world, .team(world.fixtures.red.id))
            let settled = try await post(resent, token: world.annToken).1
            #expect(settled?.results.first?.settled == true && settled?.accepted == 1, "\(String(describing: settled))")
            #expect(try pending(world, .team(world.fixtures.red.id)) == written)

            // The flood, and a new device signing in beside it.
            let newcomer = try await CentralStore.withStore(world.url) {
                try await $0.issueToken(personID: world.fixtures.bo.id, label: "").secret
            }
            let flood = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<24 { group.addTask { try await post(resent, token: world.annToken).0 } }
                let listing = try await LocalHTTP.request(
                    port: port, "/v1/replicas", headers: ["Authorization": "Bearer \(newcomer)"], timeout: .seconds(60))
                #expect(listing.status == 200, "a new device signs in during the flood")
                var statuses: [Int] = []
                for try await status in group { statuses.append(status) }
                return statuses
            }
            #expect(flood.allSatisfy { $0 == 200 || $0 == 429 }, "\(flood)")
            #expect(try pending(world, .team(world.fixtures.red.id)) == written, "settled or a duplicate: nothing written twice")
        }
    }

    /// A change sent again is judged by this replica's rules only once the master said it does not
    /// hold it: while the ledger cannot answer (here its table is locked, as a master away would be),
    /// a refusal by the rules is not said, since the master may hold the change and this replica then
    /// shows its effect (seen in review: a completion the master held came back "refused" from the
    /// host a device moved to, and the phone undid it). Once the ledger answers, the refusal stands.
    @Test func aChangeSentAgainIsNotRefusedWhileTheLedgerCannotSayWhetherTheMasterHoldsIt() async throws {
        try await server.withServer(.live) { world, client in
            let port = try #require(client.port)
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            func post(_ body: String) async throws -> Results? {
                let answer = try await LocalHTTP.request(
                    .post, port: port, uri, headers: ["Authorization": "Bearer \(world.annToken)", "Content-Type": "application/json"],
                    body: Data(body.utf8), timeout: .seconds(60))
                return try? JSONDecoder().decode(Results.self, from: answer.body)
            }
            #expect(try await post(Self.body(Self.change("done-1", "complete", task: world.redTask, note: "done")))?.accepted == 1)
            let lateStart = "{\"changes\": [\(Self.change("start-0", "start", task: world.redTask))], \"resent\": true}"
            // The ledger's table held by a transaction until told: the endpoint's check waits, then gives up.
            let (locked, lockedNow) = AsyncStream.makeStream(of: Void.self)
            let (released, release) = AsyncStream.makeStream(of: Void.self)
            let holding = Task {
                try await CentralStore.withStore(world.url) { store in
                    try await store.transaction { connection in
                        try await connection.query("LOCK TABLE field_changes IN ACCESS EXCLUSIVE MODE", logger: store.logger)
                        lockedNow.yield()
                        for await _ in released { break }
                    }
                }
            }
            for await _ in locked { break }
            let unsure = try await post(lateStart)
            release.yield()
            try await holding.value
            #expect(unsure?.results.isEmpty == true, "kept on the device, not refused: \(String(describing: unsure))")
            let sure = try await post(lateStart)
            #expect(sure?.rejected == 1, "the master does not hold it: the replica's refusal stands: \(String(describing: sure))")
        }
    }

    @Test func aPushToAReplicaNotGeneratedYetIs404AndOneThatCannotBeWrittenIs503() async throws {
        try await server.withServer { world, client in
            let checkin = Self.body(Self.change("k-1", "checkin", task: nil, extra: "\"latitude\": 1, \"longitude\": 2"))
            let personal = "/v1/replicas/person-\(world.fixtures.ann.id)/changes"
            #expect(try await SyncServerTests.post(client, personal, token: world.annToken, body: checkin).status == .notFound)

            let red = world.folder.appending(path: ReplicaID.team(world.fixtures.red.id).fileName)
            try Data("not a database".utf8).write(to: red)
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            let response = try await SyncServerTests.post(client, uri, token: world.annToken, body: checkin)
            #expect(response.status == .serviceUnavailable, "never a 500: the device keeps the change and retries")
        }
    }

    /// Fields a hostile client controls, each refused on its own with a reason;
    /// what is kept of a refused change for managers names only this replica's tasks.
    @Test func hostileFieldsAreRefusedChangeByChangeAndKeepNothingOutsideTheReplica() async throws {
        try await server.withServer { world, client in
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            let blueTask = try await CentralStore.withStore(world.url) { store in
                try await store.listTasks().first { $0.teamID == world.fixtures.blue.id }!.id
            }
            let oneCharacterNote = "a" + String(repeating: "\u{301}", count: 300_000)
            let tries = Self.body(
                #"{"id": "far-future", "operation": "checkin", "made_at": "9999-01-01T00:00:00Z", "latitude": 1, "longitude": 2}"#,
                Self.change("long-ago", "start", task: world.redTask).replacingOccurrences(of: "2026-11-21", with: "1970-01-02"),
                Self.change("checkin-task", "checkin", task: blueTask, note: "spying", extra: "\"latitude\": 1, \"longitude\": 2"),
                Self.change("big-note", "complete", task: world.redTask, note: oneCharacterNote),
                Self.change("other-team", "complete", task: blueTask, note: "on another team's task"),
                Self.change(String(repeating: "é", count: 60), "start", task: world.redTask)
            )
            let results = try SyncServerTests.decode(
                Results.self, try await SyncServerTests.post(client, uri, token: world.annToken, body: tries))
            #expect(results.accepted == 0 && results.rejected == 6, "\(results.results)")
            let reasons = Dictionary(uniqueKeysWithValues: results.results.map { ($0.id, $0.reason ?? "") })
            #expect(reasons["far-future"]?.contains("made_at") == true)
            #expect(reasons["long-ago"]?.contains("made_at") == true)
            #expect(reasons["checkin-task"]?.contains("no task_id, no note") == true)
            #expect(reasons["big-note"]?.contains("bytes") == true)
            #expect(reasons["other-team"]?.contains("not in this replica") == true)
            let kept = try await blockingRead(world.folder.appending(path: "team-\(world.fixtures.red.id).sqlite").path)
            #expect(!kept.contains { $0.task == blueTask }, "a refused change keeps no task of another team: \(kept)")
            #expect(kept.allSatisfy { ($0.note?.utf8.count ?? 0) <= WorkerChange.maximumNoteBytes })
        }
    }

    /// The refused changes a replica keeps: task and note.
    func blockingRead(_ path: String) async throws -> [(task: Int64?, note: String?)] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try await queue.read { db in
            try Row.fetchAll(db, sql: "SELECT task_id, json_extract(payload, '$.note') FROM worker_changes WHERE rejection IS NOT NULL")
                .map { ($0[0], $0[1]) }
        }
    }

    @Test func workersChangeOnlyWhatWorkersOwnOnTheirOwnTasks() async throws {
        try await server.withServer { world, client in
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            let boToken = try await CentralStore.withStore(world.url) {
                try await $0.issueToken(personID: world.fixtures.bo.id, label: "").secret
            }
            let boTries = Self.body(
                Self.change("b-1", "complete", task: world.redTask),
                Self.change("b-2", "start", task: world.floatingTask),
                Self.change("b-3", "claim", task: world.floatingTask),
                Self.change("b-4", "claim", task: world.floatingTask),
                Self.change("b-5", "start", task: 999_999),
                Self.change("b-6", "checkin", task: nil, extra: "\"latitude\": 95, \"longitude\": 0"),
                Self.change("b-7", "checkin", task: nil, extra: "\"latitude\": 51.5, \"longitude\": -0.1"),
                Self.change("b-8", "reopen", task: world.redTask)
            )
            let response = try SyncServerTests.decode(
                Results.self, try await SyncServerTests.post(client, uri, token: boToken, body: boTries))
            let status = Dictionary(uniqueKeysWithValues: response.results.map { ($0.id, $0) })
            #expect(status["b-1"]?.reason == "task \(world.redTask) is assigned to someone else")
            #expect(status["b-2"]?.reason == "claim task \(world.floatingTask) before working on it")
            #expect(status["b-3"]?.status == .accepted)
            #expect(status["b-4"]?.reason == "task \(world.floatingTask) is already yours")
            #expect(status["b-5"]?.reason == "task 999999 is not in this replica")
            #expect(status["b-6"]?.status == .rejected)
            #expect(status["b-7"]?.status == .accepted)
            #expect(status["b-8"]?.reason == "task \(world.redTask) is not completed")
            #expect(response.accepted == 2 && response.rejected == 6)
            #expect(try pending(world, .team(world.fixtures.red.id)) == 2)
            let contents = try ReplicaContents.read(path: world.folder.appending(path: "team-\(world.fixtures.red.id).sqlite").path)
            #expect(contents.rejectedWorkerChanges == 6, "refused changes are kept, with their reason, for the managers")
            let again = try SyncServerTests.decode(Results.self, try await SyncServerTests.post(client, uri, token: boToken, body: boTries))
            #expect(again.results.map(\.status) == response.results.map(\.status), "a retried refusal is refused again, not stored twice")
            #expect(again.results.first { $0.id == "b-1" }?.reason == status["b-1"]?.reason)
            let after = try ReplicaContents.read(path: world.folder.appending(path: "team-\(world.fixtures.red.id).sqlite").path)
            #expect(after.rejectedWorkerChanges == 6 && after.acceptedWorkerChanges == 2)
        }
    }

    /// Seen failing before: Bo sending the id of Ann's refused change was told
    /// Ann's reason, and an id with a NUL was stored cut at the NUL.
    @Test func aChangeIdIsItsMakersAndOneWithAControlCharacterIsNotKept() async throws {
        try await server.withServer { world, client in
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            let boToken = try await CentralStore.withStore(world.url) {
                try await $0.issueToken(personID: world.fixtures.bo.id, label: "").secret
            }
            let ann = try SyncServerTests.decode(
                Results.self,
                try await SyncServerTests.post(
                    client, uri, token: world.annToken, body: Self.body(Self.change("ann-1", "reopen", task: world.redTask))))
            #expect(ann.results.first?.reason == "task \(world.redTask) is not completed")
            let bo = try SyncServerTests.decode(
                Results.self,
                try await SyncServerTests.post(
                    client, uri, token: boToken, body: Self.body(Self.change("ann-1", "claim", task: world.floatingTask))))
            #expect(bo.results.first?.reason == "this change id is taken; a change needs an id of its own")
            let nul = try SyncServerTests.decode(
                Results.self,
                try await SyncServerTests.post(
                    client, uri, token: world.annToken, body: Self.body(Self.change("x\\u0000y", "claim", task: world.floatingTask))))
            #expect(nul.results.first?.status == .rejected)
            let contents = try ReplicaContents.read(path: world.folder.appending(path: "team-\(world.fixtures.red.id).sqlite").path)
            #expect(contents.rejectedWorkerChanges == 1, "Ann's refused change only; nothing of Bo's or of the bad id")
        }
    }

    @Test(arguments: [
        ("not json at all", 400),
        (
            "{\"changes\": [{\"id\": \"x\", \"operation\": \"complete\", \"task_id\": 1, \"made_at\": \"2026-11-21T10:00:00Z\", \"status\": \"completed\"}]}",
            400
        ),
        ("{\"changes\": [{\"id\": \"x\", \"operation\": \"delete\", \"task_id\": 1, \"made_at\": \"2026-11-21T10:00:00Z\"}]}", 400),
        ("{\"changes\": [], \"admin\": true}", 400),
        ("{\"changes\": [{\"id\": \"x\", \"operation\": \"start\", \"task_id\": 1, \"made_at\": \"yesterday\"}]}", 400),
    ])
    func malformedBodiesAre400AndChangeNothing(_ body: String, _ status: Int) async throws {
        try await server.withServer { world, client in
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            let response = try await SyncServerTests.post(client, uri, token: world.annToken, body: body)
            #expect(response.status.code == status, "\(String(buffer: response.body))")
            #expect(String(buffer: response.body).contains("\"error\""))
            #expect(try pending(world, .team(world.fixtures.red.id)) == 0)
        }
    }

    @Test func oversizedAndOverlongPushesAreRefused() async throws {
        try await server.withServer { world, client in
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            let huge = Self.body(Self.change("big", "complete", task: world.redTask, note: String(repeating: "x", count: 1_100_000)))
            let tooLarge = try await SyncServerTests.post(client, uri, token: world.annToken, body: huge)
            #expect(tooLarge.status == .contentTooLarge)
            let many = Self.body(
                (0...1_000).map { Self.change("m-\($0)", "checkin", task: nil, extra: "\"latitude\": 1, \"longitude\": 1") }
                    .joined(separator: ", "))
            let tooMany = try await SyncServerTests.post(client, uri, token: world.annToken, body: many)
            #expect(tooMany.status == .badRequest)
            let stored = try pending(world, .team(world.fixtures.red.id))
            #expect(stored == 0)
        }
    }

    @Test func pushingToAnotherTeamOrTheCommonReplicaIsRefused() async throws {
        try await server.withServer { world, client in
            let push = Self.body(Self.change("x-1", "claim", task: world.floatingTask))
            let otherTeam = try await SyncServerTests.post(
                client, "/v1/replicas/team-\(world.fixtures.blue.id)/changes", token: world.annToken, body: push)
            let common = try await SyncServerTests.post(client, "/v1/replicas/common/changes", token: world.annToken, body: push)
            let anonymous = try await SyncServerTests.post(
                client, "/v1/replicas/team-\(world.fixtures.red.id)/changes", token: nil, body: push)
            #expect(otherTeam.status == .forbidden)
            #expect(common.status == .forbidden)
            #expect(anonymous.status == .unauthorized)
        }
    }

    @Test func aFullRebuildKeepsPushedChangesAndTheFieldsView() async throws {
        try await server.withServer { world, client in
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            _ = try await SyncServerTests.post(
                client, uri, token: world.annToken,
                body: Self.body(Self.change("c-9", "complete", task: world.redTask, note: "done")))
            try await ReplicaGenerator(.init(databaseURL: world.url, directory: world.folder)).rebuildAll()
            let contents = try ReplicaContents.read(path: world.folder.appending(path: ReplicaID.team(world.fixtures.red.id).fileName).path)
            #expect(contents.acceptedWorkerChanges == 1)
            let task = try #require(contents.tasks.first { $0.master.id == world.redTask })
            #expect(task.status == .completed && task.completionNote == "done")
        }
    }

    /// Group commit: pushes that arrive while their replica cannot be written
    /// (here another process holds its lock) are written together as soon as it
    /// can, in one transaction, and each push still gets its own answers.
    @Test func pushesQueuedBehindALockedReplicaAreWrittenInOneTransactionEachWithItsOwnResults() async throws {
        try await server.withServer { world, client in
            let red = ReplicaID.team(world.fixtures.red.id)
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            let boToken = try await CentralStore.withStore(world.url) {
                try await $0.issueToken(personID: world.fixtures.bo.id, label: "").secret
            }
            let lock = try #require(try ReplicaDirectory(world.folder).tryLock(red))
            let pushes = (0..<12).map { index in
                Task {
                    let token = index.isMultiple(of: 2) ? world.annToken : boToken
                    let body = Self.body(Self.change("g-\(index)", "checkin", task: nil, extra: "\"latitude\": 1, \"longitude\": 2"))
                    return (index, try await SyncServerTests.post(client, uri, token: token, body: body))
                }
            }
            func metric(_ name: String) async throws -> Int? {
                let text = String(buffer: try await SyncServerTests.get(client, "/metrics", token: nil).body)
                return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ")[1]) }
            }
            try await expectEventually("all twelve pushes wait for the lock", within: .seconds(4), every: .milliseconds(20)) {
                try await metric("teamwork_sync_pushes_waiting") == 12
            }
            #expect(try pending(world, red) == 0, "nothing is written while the lock is held")
            lock.release()

            for push in pushes {
                let (index, response) = try await push.value
                #expect(response.status == .ok)
                let answer = try SyncServerTests.decode(Results.self, response)
                #expect(answer.results.map(\.id) == ["g-\(index)"] && answer.accepted == 1, "each push gets its own result")
            }
            #expect(try pending(world, red) == 12)
            #expect(try await metric("teamwork_sync_push_writes_total") == 1, "one transaction for the twelve")
            #expect(try await metric("teamwork_sync_pushes_written_total") == 12)
            #expect(try await metric("teamwork_sync_pushes_waiting") == 0)
        }
    }
}
