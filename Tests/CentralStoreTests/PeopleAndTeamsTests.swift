import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

@Suite("People, teams and locations")
struct PeopleAndTeamsTests {
    @Test func aPersonIsFoundByIdOrByEmailInAnyCase() async throws {
        try await TestDatabase.withStore { store in
            let added = try await store.addPerson(try NewPerson(firstName: "Ann", lastName: "Lee", email: "Ann@Example.org", role: .worker))
            #expect(try await store.person(reference: String(added.id)) == added)
            #expect(try await store.person(reference: "ann@example.ORG") == added)
        }
    }

    @Test func aDuplicateEmailIsAConflictInAnyCaseAndWritesNothing() async throws {
        try await TestDatabase.withStore { store in
            _ = try await store.addPerson(try NewPerson(firstName: "Ann", lastName: "Lee", email: "ann@example.org", role: .worker))
            await #expect(throws: TeamworkError.conflict("a person with this email already exists")) {
                try await store.addPerson(try NewPerson(firstName: "Other", lastName: "X", email: "ANN@example.org", role: .manager))
            }
            #expect(try await store.listPeople().count == 1)
        }
    }

    @Test func unknownIdsEmailsAndSlugsAreNotFound() async throws {
        try await TestDatabase.withStore { store in
            await #expect(throws: TeamworkError.notFound("no person with id 999")) { try await store.person(id: 999) }
            await #expect(throws: TeamworkError.notFound("no person with that email")) { try await store.person(reference: "x@y.zz") }
            await #expect(throws: TeamworkError.notFound("no team with slug 'nope'")) { try await store.team(reference: "nope") }
            await #expect(throws: TeamworkError.notFound("no location with id 5")) { try await store.location(id: 5) }
            await #expect(throws: TeamworkError.notFound("no team with id 7")) { try await store.addMember(teamID: 7, personID: 1) }
        }
    }

    @Test func textRoundTripsExactly() async throws {
        try await TestDatabase.withStore { store in
            let nasty = "O'Brien \"quoted\" ; DROP TABLE people; -- 🚧👷‍♀️ \\ $1 %s \u{0}".replacingOccurrences(of: "\u{0}", with: "")
            let long = String(repeating: "Zoë 🚧 ', ", count: 20_000)
            let team = try await store.addTeam(try NewTeam(slug: "red", name: nasty, description: long))
            let fetched = try await store.team(id: team.id)
            #expect(fetched.name == nasty)
            #expect(fetched.description == long)
            let person = try await store.addPerson(
                try NewPerson(firstName: nasty, lastName: "🚧", email: "o'brien@example.org", role: .worker))
            #expect(try await store.person(id: person.id).firstName == nasty)
        }
    }

    @Test func updatesChangeOnlyTheGivenFieldsAndCanClearOptionalOnes() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let withAvatar = try await store.updatePerson(
                id: world.ann.id, try PersonChanges(avatarURL: .some("https://example.org/a.png"), defaultTeamID: .some(world.red.id))
            )
            #expect(withAvatar.avatarURL == "https://example.org/a.png")
            #expect(withAvatar.defaultTeamID == world.red.id)
            #expect(withAvatar.firstName == world.ann.firstName)
            let cleared = try await store.updatePerson(
                id: world.ann.id, try PersonChanges(avatarURL: .some(nil), defaultTeamID: .some(nil)))
            #expect(cleared.avatarURL == nil && cleared.defaultTeamID == nil)
            let team = try await store.updateTeam(id: world.red.id, try TeamChanges(name: "Crimson", color: .some("#AA0000")))
            #expect(team.name == "Crimson" && team.color == "#aa0000" && team.slug == "red")
        }
    }

    @Test func aDefaultTeamMustBeOneOfThePersonsTeams() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            await #expect(throws: TeamworkError.invalid("a default team must be one of the person's teams")) {
                try await store.updatePerson(id: world.ann.id, try PersonChanges(defaultTeamID: .some(world.blue.id)))
            }
            _ = try await store.updatePerson(id: world.ann.id, try PersonChanges(defaultTeamID: .some(world.red.id)))
            try await store.removeMember(teamID: world.red.id, personID: world.ann.id)
            #expect(try await store.person(id: world.ann.id).defaultTeamID == nil)
        }
    }

    @Test func aDuplicateSlugOrMembershipIsAConflict() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            await #expect(throws: TeamworkError.conflict("a team with this slug already exists")) {
                try await store.addTeam(try NewTeam(slug: "red", name: "Again"))
            }
            await #expect(throws: TeamworkError.conflict("this person is already a member of the team")) {
                try await store.addMember(teamID: world.red.id, personID: world.ann.id)
            }
        }
    }

    @Test func aTeamWithTasksCannotBeRemovedButAnEmptyOneCan() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            _ = try await store.createTask(try world.task(team: world.red))
            await #expect(throws: TeamworkError.self) { try await store.removeTeam(id: world.red.id) }
            #expect(try await store.listTeams().count == 2)
            try await store.removeTeam(id: world.blue.id)
            #expect(try await store.listTeams().map(\.team.slug) == ["red"])
            #expect(try await store.person(id: world.cy.id).id == world.cy.id)
        }
    }

    @Test func aPersonWithAssignedTasksCannotBeRemoved() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let task = try await store.createTask(try world.task(team: world.red, assignee: world.ann))
            await #expect(throws: TeamworkError.self) { try await store.removePerson(id: world.ann.id) }
            _ = try await store.assignTask(id: task.id, to: try Assignment(teamID: world.red.id, assigneeID: nil))
            try await store.removePerson(id: world.ann.id)
            #expect(try await store.members(teamID: world.red.id).map(\.person.id) == [world.bo.id])
        }
    }

    @Test func removingAMemberHandsTheirOpenTasksBackToTheTeam() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let open = try await store.createTask(try world.task("open one", team: world.red, assignee: world.ann))
            let elsewhere = try await store.createTask(try world.task("personal", assignee: world.ann))
            let released = try await store.removeMember(teamID: world.red.id, personID: world.ann.id)
            #expect(released == 1)
            let after = try await store.task(id: open.id)
            #expect(after.assigneeID == nil && after.status == .open && after.teamID == world.red.id)
            #expect(try await store.task(id: elsewhere.id).assigneeID == world.ann.id)
            #expect(try await store.history(taskID: open.id).last?.changes["assignee_id"]?.old == String(world.ann.id))
        }
    }

    @Test func locationsRecordCoordinatesAndAddress() async throws {
        try await TestDatabase.withStore { store in
            let added = try await store.addLocation(
                try NewLocation(
                    name: "Substation 4", latitude: -33.8688, longitude: 151.2093, elevation: 58.5,
                    address: Address(street: "1 George St", city: "Sydney", region: "NSW", postalCode: "2000", country: "AU")
                ))
            #expect(try await store.location(id: added.id) == added)
            #expect(added.kind == .site)
            #expect(try await store.listLocations(kind: .person).isEmpty)
            #expect(try await store.listLocations(kind: .site).map(\.id) == [added.id])
        }
    }

    @Test func theDatabaseRefusesOutOfRangeCoordinatesEvenWithoutTheModel() async throws {
        _ = try await TestDatabase.withStore { store in
            await #expect(throws: (any Error).self) {
                _ = try await store.connection.query(
                    "INSERT INTO locations (kind, latitude, longitude) VALUES ('site', 91, 0)", logger: store.logger)
            }
        }
    }
}
