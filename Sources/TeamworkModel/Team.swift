import Foundation

/// A group of people that tasks can be assigned to as a whole.
public struct Team: Sendable, Codable, Equatable, Identifiable {
    public var id: Int64
    /// Short unique name used on the command line and in file names: `red-team`.
    public var slug: String
    public var name: String
    public var description: String
    /// `#rrggbb`, lower case.
    public var color: String?
    public var createdBy: Int64?
    public var createdAt: Date
    public var updatedAt: Date
    /// Members see each other's last-known positions; managers always do.
    public var sharesPositions: Bool
    /// The IANA time zone the team works in (`Europe/Stockholm`): its days, windows and due dates.
    public var timeZone: String
    /// Where its workers start and end the day unless they have a place of their own (a site).
    public var depotLocationID: Int64?
    /// Minutes on site of a task that does not say.
    public var taskMinutes: Int
    /// A new team's ``taskMinutes`` (the column's default), and those of a task of no team.
    public static let defaultTaskMinutes = 45
    /// How its drives are estimated without a road network.
    public var travelArea: TravelArea

    public init(
        id: Int64, slug: String, name: String, description: String, color: String?,
        createdBy: Int64?, createdAt: Date, updatedAt: Date, sharesPositions: Bool = false, timeZone: String = "UTC",
        depotLocationID: Int64? = nil, taskMinutes: Int = Team.defaultTaskMinutes, travelArea: TravelArea = .urban
    ) {
        self.depotLocationID = depotLocationID
        self.taskMinutes = taskMinutes
        self.travelArea = travelArea
        self.timeZone = timeZone
        self.id = id
        self.slug = slug
        self.name = name
        self.description = description
        self.color = color
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.sharesPositions = sharesPositions
    }
}

/// The fields of a team to create, validated on construction.
public struct NewTeam: Sendable, Equatable {
    public var slug: String
    public var name: String
    public var description: String
    public var color: String?
    public var sharesPositions: Bool
    public var timeZone: String

    public init(
        slug: String, name: String, description: String = "", color: String? = nil, sharesPositions: Bool = false,
        timeZone: String = "UTC"
    ) throws {
        self.timeZone = try Zone(timeZone).name
        self.slug = try Validate.slug(slug)
        self.name = try Validate.name(name, field: "team name")
        self.description = description
        self.color = try color.map(Validate.color)
        self.sharesPositions = sharesPositions
    }
}

/// Changes to a team; `nil` leaves a field as it is.
public struct TeamChanges: Sendable, Equatable {
    public var slug: String?
    public var name: String?
    public var description: String?
    /// `.some(nil)` clears the colour.
    public var color: String??
    public var sharesPositions: Bool?
    public var timeZone: String?
    /// `.some(nil)` clears the depot.
    public var depotLocationID: Int64??
    public var taskMinutes: Int?
    public var travelArea: TravelArea?

    public init(
        slug: String? = nil, name: String? = nil, description: String? = nil, color: String?? = nil,
        sharesPositions: Bool? = nil, timeZone: String? = nil, depotLocationID: Int64?? = nil, taskMinutes: Int? = nil,
        travelArea: TravelArea? = nil
    ) throws {
        self.depotLocationID = depotLocationID
        self.taskMinutes = try taskMinutes.map(Validate.durationMinutes)
        self.travelArea = travelArea
        self.timeZone = try timeZone.map { try Zone($0).name }
        self.sharesPositions = sharesPositions
        self.slug = try slug.map(Validate.slug)
        self.name = try name.map { try Validate.name($0, field: "team name") }
        self.description = description
        if case .some(.some(let value)) = color {
            self.color = .some(try Validate.color(value))
        } else {
            self.color = color
        }
    }

    public var isEmpty: Bool {
        slug == nil && name == nil && description == nil && color == nil && sharesPositions == nil && timeZone == nil
            && depotLocationID == nil && taskMinutes == nil && travelArea == nil
    }
}

/// A person's place in a team.
public struct TeamMember: Sendable, Codable, Equatable {
    public var teamID: Int64
    public var person: Person
    public var joinedAt: Date

    public init(teamID: Int64, person: Person, joinedAt: Date) {
        self.teamID = teamID
        self.person = person
        self.joinedAt = joinedAt
    }
}

/// Where a team works, for estimating drives without a road network: in a city (slow, winding)
/// or in the country (faster, longer roads).
public enum TravelArea: String, Sendable, Codable, CaseIterable {
    case urban, rural
}
