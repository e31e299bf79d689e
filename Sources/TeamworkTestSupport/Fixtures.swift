import CentralStore
import Foundation
import TeamworkModel

/// A small world to test against: a manager, three workers, two teams, a site.
///
///     red:  ann (worker), bo (worker)
///     blue: cy (worker)
public struct Fixtures: Sendable {
    public var manager: Person
    public var ann: Person
    public var bo: Person
    public var cy: Person
    public var red: Team
    public var blue: Team
    public var site: Location

    public static func seed(_ store: CentralStore) async throws -> Fixtures {
        func person(_ first: String, _ role: Role) async throws -> Person {
            try await store.addPerson(try NewPerson(firstName: first, lastName: "Test", email: "\(first)@example.org", role: role))
        }
        let manager = try await person("max", .manager)
        let ann = try await person("ann", .worker)
        let bo = try await person("bo", .worker)
        let cy = try await person("cy", .worker)
        let red = try await store.addTeam(try NewTeam(slug: "red", name: "Red Team"))
        let blue = try await store.addTeam(try NewTeam(slug: "blue", name: "Blue Team"))
        try await store.addMember(teamID: red.id, personID: ann.id)
        try await store.addMember(teamID: red.id, personID: bo.id)
        try await store.addMember(teamID: blue.id, personID: cy.id)
        let site = try await store.addLocation(try NewLocation(name: "Depot", latitude: 51.5, longitude: -0.12))
        return Fixtures(manager: manager, ann: ann, bo: bo, cy: cy, red: red, blue: blue, site: site)
    }

    /// A new task with sensible defaults.
    public func task(
        _ title: String = "Fix the meter", team: Team? = nil, assignee: Person? = nil,
        priority: Priority = .normal, due: Date? = nil
    ) throws -> NewTask {
        try NewTask(
            title: title, priority: priority, assignment: try Assignment(teamID: team?.id, assigneeID: assignee?.id),
            locationID: site.id, dueAt: due
        )
    }
}
