import Foundation
import SyncProtocol
import TeamDatabase
import Testing

/// The rules for a worker change, written once and used by the device and the endpoint.
@Suite("Worker change rules")
struct WorkerChangeRulesTests {
    static let me: Int64 = 7
    static let now = Date(timeIntervalSince1970: 1_790_000_000)

    static func change(
        _ operation: WorkerChange.Operation, task: Int64? = 1, note: String? = nil, madeAt: Date = now,
        latitude: Double? = nil, longitude: Double? = nil, id: String = "c-1"
    ) -> WorkerChange {
        WorkerChange(id: id, operation: operation, taskID: task, note: note, madeAt: madeAt, latitude: latitude, longitude: longitude)
    }

    static let mine = TaskFacts(assigneeID: me, status: .assigned)
    static let free = TaskFacts(assigneeID: nil, status: .open)
    static let others = TaskFacts(assigneeID: 8, status: .assigned)

    @Test(
        arguments: [
            (change(.start), mine, true, nil),
            (change(.complete, note: "done"), mine, true, nil),
            (change(.claim), free, true, nil),
            (change(.checkin, task: nil, latitude: 1, longitude: 2), nil, true, nil),
            (change(.claim), free, false, "only a team's free-floating task can be claimed"),
            (change(.claim), TaskFacts(assigneeID: nil, status: .completed, completedBy: 8), true, "task 1 is already completed"),
            (change(.start), others, true, "task 1 is assigned to someone else"),
            (change(.start), free, true, "claim task 1 before working on it"),
            (change(.start), TaskFacts(assigneeID: me, status: .cancelled), true, "task 1 was cancelled"),
            (change(.start), nil, true, "task 1 is not in this replica"),
            (
                change(.reopen), TaskFacts(assigneeID: me, status: .completed, completedBy: 8), true,
                "only the worker who completed task 1 can reopen it"
            ),
            (change(.checkin, task: 1, latitude: 1, longitude: 2), nil, true, "a check-in carries a position only: no task_id, no note"),
            (
                change(.checkin, task: nil, latitude: 91, longitude: 2), nil, true,
                "a check-in needs a latitude between -90 and 90 and a longitude between -180 and 180"
            ),
            (change(.start, latitude: 1, longitude: 2), mine, true, "only a check-in carries a position"),
            (
                change(.start, madeAt: now.addingTimeInterval(2 * 86_400)), mine, true,
                "made_at must be after 2000-01-01 and at most a day after the server's clock"
            ),
            (
                change(.complete, note: "a" + String(repeating: "\u{301}", count: 6_000)), mine, true,
                "a note has at most 10000 bytes (UTF-8)"
            ),
            (change(.start, id: String(repeating: "é", count: 51)), mine, true, "a change id has 1 to 100 bytes and no control characters"),
            (change(.start, id: "c-1\u{0}hidden"), mine, true, "a change id has 1 to 100 bytes and no control characters"),
            (change(.start, id: "c-\u{1B}[2J"), mine, true, "a change id has 1 to 100 bytes and no control characters"),
            (
                change(.claim), TaskFacts(assigneeID: nil, status: .open, requiredSkills: ["climbing", "electrical"]), true,
                "task 1 needs climbing, electrical, which you do not have"
            ),
        ] as [(WorkerChange, TaskFacts?, Bool, String?)])
    func aChangeIsTakenOrRefusedWithItsReason(change: WorkerChange, task: TaskFacts?, inTeam: Bool, reason: String?) {
        #expect(change.rejection(by: FieldWorker(id: Self.me, skills: []), task: task, inTeam: inTeam, receivedAt: Self.now) == reason)
    }

    /// Seen failing before (schemathesis): a made_at with fractions of a second, valid RFC 3339 and
    /// allowed by docs/openapi.json, refused the whole push with 400.
    @Test(arguments: [
        ("2026-11-21T10:00:00Z", true), ("2026-11-21T10:00:00.5Z", true), ("2026-11-21T11:00:00.123456789+01:00", true),
        ("2026-11-21T10:00:00", false), ("yesterday", false), ("2026-11-21", false),
        ("2026-02-30T10:00:00Z", false), ("2026-13-01T10:00:00Z", false),
    ])
    func madeAtIsAnRFC3339TimeWithAZoneWithOrWithoutFractions(_ text: String, _ taken: Bool) throws {
        let body = #"{"changes": [{"id": "c-1", "operation": "start", "task_id": 1, "made_at": "\#(text)"}]}"#
        let decoded = Result { try JSONDecoder().decode(PushRequest.self, from: Data(body.utf8)) }
        #expect(((try? decoded.get()) != nil) == taken, "\(text)")
        if taken { #expect(abs(try decoded.get().changes[0].madeAt.timeIntervalSince1970 - 1_795_255_200) < 1) }
    }

    @Test func theDocumentStatesTheFormOfMadeAtTheServerTakes() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "../../docs/openapi.json")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let schemas = (document["components"] as? [String: Any])?["schemas"] as? [String: Any]
        let change = (schemas?["WorkerChange"] as? [String: Any])?["properties"] as? [String: Any]
        #expect((change?["made_at"] as? [String: Any])?["pattern"] as? String == WorkerChange.timePattern)
    }
}
