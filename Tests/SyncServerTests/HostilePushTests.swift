import CentralStore
import EventListener
import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing

/// Randomized hostile pushes: every body is either refused whole with a 4xx and
/// nothing stored, or answered change by change; and whatever was stored is
/// then taken in by the listener without holding anything back.
@Suite("Sync endpoint: randomized hostile pushes")
struct HostilePushTests {
    struct Results: Decodable {
        var results: [WorkerChangeResult]
    }

    /// One change with fields drawn from valid, borderline and hostile values.
    static func change(_ random: inout SplitMix, tasks: [Int64]) -> [String: Any] {
        func pick<T>(_ values: [T]) -> T { values[random.next(values.count)] }
        var fields: [String: Any] = [:]
        let idLength = pick([0, 1, 8, 36, 100, 101, 400])
        fields["id"] = String((0..<idLength).map { _ in pick(Array("abc-_é😀\u{301}\u{1B}\u{0}")) })
        fields["operation"] = pick(["start", "complete", "reopen", "claim", "checkin", "checkin", "delete", "", "COMPLETE"])
        switch random.next(6) {
        case 0: break
        case 1: fields["task_id"] = pick(tasks)
        case 2: fields["task_id"] = pick([Int64.max, -1, 0, 999_999])
        case 3: fields["task_id"] = "1"
        default: fields["task_id"] = pick(tasks)
        }
        switch random.next(6) {
        case 0: fields["note"] = "fine"
        case 1: fields["note"] = "a" + String(repeating: "\u{301}", count: pick([10, 6_000, 200_000]))
        case 2: fields["note"] = String(repeating: "x", count: pick([9_999, 10_000, 10_001]))
        case 3: fields["note"] = "\u{1B}[2J\u{202E}\u{0}bell\u{07}"
        default: break
        }
        fields["made_at"] = pick([
            "2026-11-21T10:00:00Z", "9999-12-31T23:59:59Z", "1970-01-01T00:00:00Z", "1999-12-31T23:59:59Z",
            "yesterday", "2026-11-21T10:00:00+14:00",
        ])
        if random.next(2) == 0 {
            fields["latitude"] = pick([51.5, 91, -90, 1e300] as [Double])
            fields["longitude"] = pick([-0.1, 180, -181] as [Double])
        }
        if random.next(10) == 0 { fields["status"] = "completed" }
        if random.next(15) == 0 { fields.removeValue(forKey: "made_at") }
        return fields
    }

    static func stored(_ path: String) throws -> (count: Int, tasks: [Int64?], notes: [String?]) {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            let rows = try Row.fetchAll(db, sql: "SELECT task_id, json_extract(payload, '$.note') FROM worker_changes")
            return (rows.count, rows.map { $0[0] }, rows.map { $0[1] })
        }
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func everyHostileBodyIsRefusedWholeOrChangeByChangeAndNothingStoredBlocksTheListener(seed: UInt64) async throws {
        try await SyncServerTests().withServer { world, client in
            var random = SplitMix(seed: seed)
            let uri = "/v1/replicas/team-\(world.fixtures.red.id)/changes"
            let path = world.folder.appending(path: ReplicaID.team(world.fixtures.red.id).fileName).path
            let blueTask = try await CentralStore.withStore(world.url) { store in
                try await store.listTasks().first { $0.teamID == world.fixtures.blue.id }!.id
            }
            let tasks = [world.redTask, world.floatingTask, blueTask]
            for _ in 0..<60 {
                let before = try Self.stored(path).count
                let changes = (0..<(1 + random.next(4))).map { _ in Self.change(&random, tasks: tasks) }
                var body = try JSONSerialization.data(withJSONObject: ["changes": changes])
                if random.next(12) == 0 { body = body.prefix(body.count / 2) }
                let response = try await client.execute(
                    uri: uri, method: .post,
                    headers: [.authorization: "Bearer \(world.annToken)", .contentType: "application/json"],
                    body: ByteBuffer(data: body))
                let code = response.status.code
                #expect((200..<500).contains(code) && code != 401 && code != 403, "never a 5xx: \(code)")
                if code == 200 {
                    let results = try JSONDecoder().decode(Results.self, from: Data(buffer: response.body)).results
                    #expect(results.count == changes.count)
                    #expect(results.allSatisfy { $0.status == .accepted || $0.reason?.isEmpty == false })
                } else {
                    #expect(try Self.stored(path).count == before, "a refused body stores nothing")
                }
            }
            let kept = try Self.stored(path)
            #expect(!kept.tasks.contains(blueTask), "nothing stored names another team's task")
            #expect(kept.notes.allSatisfy { ($0?.utf8.count ?? 0) <= WorkerChange.maximumNoteBytes })

            // A plain completion after all that still reaches the master.
            let done =
                #"{"changes": [{"id": "plain-done", "operation": "complete", "task_id": \#(world.redTask), "note": "after the storm", "made_at": "2026-11-21T11:00:00Z"}]}"#
            _ = try await client.execute(
                uri: uri, method: .post,
                headers: [.authorization: "Bearer \(world.annToken)", .contentType: "application/json"],
                body: ByteBuffer(string: done))
            let listener = try EventListener(.init(databaseURL: world.url, directory: world.folder))
            let report = try await listener.once()
            #expect(report.complete, "\(report.skipped)")
            let task = try await CentralStore.withStore(world.url) { try await $0.task(id: world.redTask) }
            #expect(task.status == .completed, "the worker's completion reached the master: \(task.status)")
        }
    }
}

extension Data {
    init(buffer: ByteBuffer) {
        self = buffer.getData(at: buffer.readerIndex, length: buffer.readableBytes) ?? Data()
    }
}
