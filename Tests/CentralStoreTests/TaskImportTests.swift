import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

@Suite("CSV task import")
struct TaskImportTests {
    @Test func aGoodFileCreatesEveryTaskResolvingSlugsAndEmails() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let csv = """
                title,description,priority,team,assignee,location,due
                "Replace meter, unit 4","Bring the ""big"" ladder
                and gloves",urgent,red,ANN@example.org,\(world.site.id),2026-12-01
                Inspect line,,low,blue,,,2026-12-02T08:00:00Z
                Personal errand,,,,cy@example.org,,

                """
            let created = try await store.importTasks(csv: csv)
            #expect(created.count == 3)
            #expect(created[0].title == "Replace meter, unit 4")
            #expect(created[0].description == "Bring the \"big\" ladder\nand gloves")
            #expect(created[0].teamID == world.red.id && created[0].assigneeID == world.ann.id && created[0].priority == .urgent)
            #expect(created[1].status == .open && created[1].teamID == world.blue.id)
            #expect(created[2].teamID == nil && created[2].assigneeID == world.cy.id && created[2].priority == .normal)
            #expect(try await store.listTasks().count == 3)
        }
    }

    @Test(arguments: [
        (
            "title,team,due\nok,red,2026-12-01\nbad date,red,31/12/2026\n",
            "line 3, column 'due': due must be an ISO 8601 date like 2026-12-01 or 2026-12-01T09:30:00Z"
        ),
        ("title,team\nok,red\nno team,nope\n", "line 3, column 'team': no team 'nope'"),
        (
            "title,team,assignee\nok,red,ann@example.org\nnot a member,red,cy@example.org\n",
            "line 3, column 'assignee': the assignee is not a member of that team"
        ),
        (
            "title,team,priority\nok,red,high\nbad,red,critical\n",
            "line 3, column 'priority': priority must be one of: low, normal, high, urgent"
        ),
        ("title,team\nok,red\n   ,red\n", "line 3, column 'title': title must not be empty"),
        ("title,team,assignee\nok,red,\nnobody,,\n", "line 3, column 'team': a task needs a team, an assignee, or both"),
        ("title,team,location\nok,red,\nfar,red,999\n", "line 3, column 'location': no site named or numbered '999'"),
        ("title,team,location\nok,red,Depot\nfar,red,Nowhere\n", "line 3, column 'location': no site named or numbered 'Nowhere'"),
        ("title,team,checklist\nok,red,\nchecked,red,Nope\n", "line 3: no checklist named 'Nope'"),
        (
            "title,team,customer\nok,red,\nfor whom,red,nobody@example.org\n",
            "line 3, column 'customer': no such customer (an id or an email)"
        ),
        (
            "title,team,colour\nok,red,blue\n",
            "line 1: unknown column 'colour'; the columns are title, description, priority, team, assignee, location, due, requires, window, checklist, duration, customer, reference"
        ),
        ("team\nred\n", "line 1: the header needs a 'title' column"),
        ("title,team\nok,red\n\"broken,red\n", "line 3: a quoted field is never closed"),
    ])
    func aBadLineStopsTheImportNamingLineAndColumnAndNothingIsWritten(_ csv: String, _ message: String) async throws {
        try await TestDatabase.withStore { store in
            _ = try await Fixtures.seed(store)
            let feedBefore = try await store.feed().count
            await #expect(throws: TeamworkError.invalid(message)) { try await store.importTasks(csv: csv) }
            #expect(try await store.listTasks().isEmpty)
            #expect(try await store.feed().count == feedBefore)
        }
    }

    /// A site is named as people know it (its id still works); a name two sites share is refused,
    /// not guessed; a checklist is named and its latest version carried.
    @Test func aSiteByItsNameAndAChecklistByItsNameAreTaken() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let meter = try await store.publishChecklist(
                name: "Meter", items: [ChecklistItem(key: "reading", kind: .number, label: "Reading", required: true)], existing: false)
            let created = try await store.importTasks(
                csv: "title,team,location,checklist\nBy name,red,depot,Meter\nBy id,red,\(world.site.id),\n")
            #expect(created.map(\.locationID) == [world.site.id, world.site.id])
            #expect(created[0].checklist?.name == "Meter" && created[0].checklist?.version == meter.version)
            #expect(created[1].checklist == nil)
            _ = try await store.addLocation(try NewLocation(name: "Depot", latitude: 59.3, longitude: 18.1))
            await #expect(
                throws: TeamworkError.invalid("line 2, column 'location': 2 sites are named 'Depot': give one's id (location list)")
            ) {
                try await store.importTasks(csv: "title,team,location\nAmbiguous,red,Depot\n")
            }
        }
    }

    @Test func aLargeImportIsOneTransaction() async throws {
        try await TestDatabase.withStore { store in
            _ = try await Fixtures.seed(store)
            var csv = "title,team,due\n"
            for index in 1...2_000 { csv += "Task \(index),red,2026-12-01\n" }
            let created = try await store.importTasks(csv: csv)
            #expect(created.count == 2_000)
            #expect(Set(try await store.history(taskID: created[0].id).map(\.action)) == ["created"])
        }
    }
}
