import CentralStore
import Foundation
import TeamDatabase
import TeamworkModel

/// The common data of one master snapshot — teams, people, who belongs where —
/// and what each replica shows of it.
struct CommonData: Sendable {
    var teams: [Team]
    var teamsByID: [Int64: Team]
    var people: [Int64: Person]
    var membersByTeam: [Int64: [Person]]
    /// The parts catalogue, retired parts included (marked so).
    var parts: [Part] = []

    static func load(_ snapshot: ReplicationSnapshot) async throws -> CommonData {
        let teams = try await snapshot.teams()
        let people = Dictionary(uniqueKeysWithValues: try await snapshot.people().map { ($0.id, $0) })
        var membersByTeam: [Int64: [Person]] = [:]
        for (teamID, personID) in try await snapshot.memberships() {
            if let person = people[personID] { membersByTeam[teamID, default: []].append(person) }
        }
        return CommonData(
            teams: teams, teamsByID: Dictionary(uniqueKeysWithValues: teams.map { ($0.id, $0) }),
            people: people, membersByTeam: membersByTeam, parts: try await snapshot.parts()
        )
    }

    /// A team replica lists the team's members; a personal one, its owner.
    func members(of replica: ReplicaID) -> [Person] {
        switch replica {
        case .team(let id): membersByTeam[id] ?? []
        case .person(let id): people[id].map { [$0] } ?? []
        case .common: []
        }
    }

    /// The name and slug recorded in a replica's `meta`.
    func owner(of replica: ReplicaID) -> (name: String, slug: String) {
        switch replica {
        case .team(let id): (teamsByID[id]?.name ?? "", teamsByID[id]?.slug ?? "")
        case .person(let id): (people[id]?.displayName ?? "", "")
        case .common: ("", "")
        }
    }
}
