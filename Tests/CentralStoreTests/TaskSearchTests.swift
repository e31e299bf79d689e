import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// `task list --search` and the board's search read one filter: an id, or text in the title, the
/// description, the site's name or address, or the assignee's name; the text is matched as text.
@Suite("Task search")
struct TaskSearchTests {
    @Test func aSearchFindsByTitleSiteAddressPersonAndIdAndTakesItsTextLiterally() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let meter = try await store.createTask(try world.task("Replace meter", team: world.red, assignee: world.ann))
            var valve = try world.task("Valve at 100%", team: world.blue)
            valve.locationID = nil
            valve.requiredSkills = ["plumbing"]
            let other = try await store.createTask(valve)
            func found(_ text: String) async throws -> [Int64] { try await store.listTasks(TaskFilter(search: text)).map(\.id) }
            #expect(try await found("METER") == [meter.id], "any case")
            #expect(try await found("depot") == [meter.id], "the site's name (the fixtures' site)")
            #expect(try await found("ann test") == [meter.id], "the assignee's name")
            #expect(try await found(String(other.id)) == [other.id], "an id")
            #expect(try await found("100%") == [other.id], "a % is itself")
            #expect(try await found("1_0").isEmpty, "an _ is itself")
            #expect(try await found("  ").count == 2, "blank: no search")
            #expect(try await store.listTasks(TaskFilter(skill: "plumbing")).map(\.id) == [other.id])
            await #expect(throws: TeamworkError.self) { try await found(String(repeating: "x", count: 201)) }
        }
    }
}
