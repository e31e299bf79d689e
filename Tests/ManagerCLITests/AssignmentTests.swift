import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// `task assign` never takes a task out of its team unless told: what is not said is kept, and
/// an assignment that changes or drops the team says so.
@Suite("teamwork-manager task assign: no surprises")
struct AssignmentTests {
    /// Red (Stockholm): Ann and Bo; blue: Bo too; Cy in no team. One task of red's, 07:30–09:30 on red's clock.
    static func withCrew(_ body: (ManagerTool, DatabaseURL, Int64) async throws -> Void) async throws {
        try await TestDatabase.withFresh { url in
            let tool = ManagerTool(url)
            for first in ["Ann", "Bo", "Cy"] {
                _ = try await tool.ok("person", "add", "--first", first, "--last", "Field", "--email", "\(first.lowercased())@example.org")
            }
            _ = try await tool.ok("team", "add", "red", "--name", "Red", "--time-zone", "Europe/Stockholm")
            _ = try await tool.ok("team", "add", "blue", "--name", "Blue", "--time-zone", "Europe/Stockholm")
            for (team, person) in [("red", "ann"), ("red", "bo"), ("blue", "bo")] {
                _ = try await tool.ok("team", "add-member", team, "\(person)@example.org")
            }
            let made = try await tool.run([
                "task", "create", "--title", "Meter", "--team", "red", "--window", "2026-12-01T07:30/PT2H", "--json",
            ])
            #expect(made.status == 0, "\(made.stderr)")
            try await body(tool, url, try JSONOutput.decode(FieldTask.self, made.stdout).id)
        }
    }

    @Test func anAssigneeWithoutATeamKeepsTheTasksTeamAndItsClock() async throws {
        try await Self.withCrew { tool, url, task in
            let said = try await tool.ok("task", "assign", String(task), "--assignee", "ann@example.org")
            let now = try await CentralStore.withStore(url) { try await $0.task(id: task) }
            let red = try await CentralStore.withStore(url) { try await $0.team(reference: "red") }
            #expect(now.teamID == red.id, "still red's")
            #expect(now.timeZone == "Europe/Stockholm", "still on red's clock")
            #expect(said.contains("Ann Field") && said.contains("red"), "says to whom and in which team: \(said)")
        }
    }

    @Test func anAssigneeOutsideTheTasksTeamIsRefusedUntilTheTeamIsStated() async throws {
        try await Self.withCrew { tool, url, task in
            let before = try await CentralStore.withStore(url) { try await $0.task(id: task) }
            let refused = try await tool("task", "assign", String(task), "--assignee", "cy@example.org")
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("red") && refused.stderr.contains("--personal"), "says why and how: \(refused.stderr)")
            #expect(try await CentralStore.withStore(url) { try await $0.task(id: task) } == before, "nothing changed")

            // Stated: a personal task, and the output says it left red.
            let said = try await tool.ok("task", "assign", String(task), "--assignee", "cy@example.org", "--personal")
            #expect(try await CentralStore.withStore(url) { try await $0.task(id: task) }.teamID == nil)
            #expect(said.contains("no longer red's"), "\(said)")

            // Moved to another team, stated: said too.
            let moved = try await tool.ok("task", "assign", String(task), "--team", "blue", "--assignee", "bo@example.org")
            #expect(moved.contains("blue"), "\(moved)")
        }
    }

    /// Seen before: nothing warned when one person got two tasks at the same time.
    @Test func anAssignmentThatDoubleBooksSomeoneIsMadeAndSaidSo() async throws {
        try await Self.withCrew { tool, url, task in
            _ = try await tool.ok("task", "assign", String(task), "--assignee", "ann@example.org")
            let made = try await tool.run([
                "task", "create", "--title", "Valve", "--team", "red", "--window", "2026-12-01T08:30/PT1H", "--json",
            ])
            let second = try JSONOutput.decode(FieldTask.self, made.stdout).id
            let said = try await tool.ok("task", "assign", String(second), "--assignee", "ann@example.org")
            #expect(said.contains("also has task \(task)") && said.contains("double-booked"), "\(said)")
            #expect(try await CentralStore.withStore(url) { try await $0.task(id: second) }.assigneeID != nil, "made all the same")
            let apart = try await tool.run([
                "task", "create", "--title", "Later", "--team", "red", "--window", "2026-12-01T09:30/PT1H", "--json",
            ])
            let third = try JSONOutput.decode(FieldTask.self, apart.stdout).id
            #expect(!(try await tool.ok("task", "assign", String(third), "--assignee", "bo@example.org")).contains("double-booked"))
        }
    }

    @Test func joiningATeamWithNoDefaultTeamMakesItTheirs() async throws {
        try await Self.withCrew { tool, url, _ in
            let people = try await CentralStore.withStore(url) { try await $0.listPeople() }
            let (ann, bo) = (try #require(people.first { $0.firstName == "Ann" }), try #require(people.first { $0.firstName == "Bo" }))
            let (red, blue) = try await CentralStore.withStore(url) {
                (try await $0.team(reference: "red"), try await $0.team(reference: "blue"))
            }
            #expect(ann.defaultTeamID == red.id, "Ann's first team became her default")
            #expect(bo.defaultTeamID == red.id, "Bo's first team stays his default when he joins blue")
            _ = blue
        }
    }
}
