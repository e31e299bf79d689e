import Foundation
import Testing

@testable import CentralStore

@Suite("The dispatch map's keys")
struct DispatchMapKeysTests {
    /// Every property set, so every key is written.
    static let everything = DispatchMap.Properties(
        kind: "task", taskID: 1, title: "t", status: "open", priority: "high", team: "red", assigneeID: 2, assignee: "Ann",
        due: Date(timeIntervalSince1970: 1), windowStart: Date(timeIntervalSince1970: 2), windowEnd: Date(timeIntervalSince1970: 3),
        requires: ["x"], late: true, site: "s", plannedStart: Date(timeIntervalSince1970: 4), personID: 5, name: "n", teams: ["red"],
        reportedAt: Date(timeIntervalSince1970: 6), ageMinutes: 7, openTasks: 8)

    /// The keys are written out (no key strategy converts them at every encoding), and they are what
    /// `convertToSnakeCase` made of the property names: a map tool reading them sees no change.
    @Test func theWrittenKeysAreTheSnakeCaseOfEveryPropertysName() throws {
        let plain = JSONEncoder(), converting = JSONEncoder()
        plain.outputFormatting = .sortedKeys
        converting.outputFormatting = .sortedKeys
        converting.keyEncodingStrategy = .convertToSnakeCase
        let written = try plain.encode(Self.everything)
        #expect(written == (try converting.encode(Self.everything)))
        let keys = Set(try #require(try JSONSerialization.jsonObject(with: written) as? [String: Any]).keys)
        #expect(keys.count == Mirror(reflecting: Self.everything).children.count)
        #expect(
            keys == [
                "kind", "task_id", "title", "status", "priority", "team", "assignee_id", "assignee", "due", "window_start",
                "window_end", "requires", "late", "site", "planned_start", "person_id", "name", "teams", "reported_at",
                "age_minutes", "open_tasks",
            ])
    }
}
