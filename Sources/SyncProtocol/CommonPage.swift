import Foundation

/// One page of what changed in the common replica since a client's position:
/// people (names and roles), teams, memberships and locations. Same paging and
/// refetch rules as ``ChangePage``.
public struct CommonPage: Sendable, Codable, Equatable {
    public struct Person: Sendable, Codable, Equatable {
        public var id: Int64
        public var firstName: String
        public var lastName: String
        public var role: String
        public var avatarURL: String?
        public var rowVersion: Int64

        public init(
            id: Int64, firstName: String, lastName: String, role: String, avatarURL: String?, rowVersion: Int64
        ) {
            self.id = id
            self.firstName = firstName
            self.lastName = lastName
            self.role = role
            self.avatarURL = avatarURL
            self.rowVersion = rowVersion
        }
    }

    public struct Team: Sendable, Codable, Equatable {
        public var id: Int64
        public var slug: String
        public var name: String
        public var description: String
        public var color: String?
        public var rowVersion: Int64

        public init(id: Int64, slug: String, name: String, description: String, color: String?, rowVersion: Int64) {
            self.id = id
            self.slug = slug
            self.name = name
            self.description = description
            self.color = color
            self.rowVersion = rowVersion
        }
    }

    public struct Membership: Sendable, Codable, Equatable {
        public var teamID: Int64
        public var personID: Int64
        public var rowVersion: Int64

        public init(teamID: Int64, personID: Int64, rowVersion: Int64) {
            self.teamID = teamID
            self.personID = personID
            self.rowVersion = rowVersion
        }
    }

    public struct Location: Sendable, Codable, Equatable {
        public var id: Int64
        public var kind: String
        public var personID: Int64?
        public var name: String
        public var latitude: Double
        public var longitude: Double
        public var street: String
        public var city: String
        public var country: String
        public var rowVersion: Int64

        public init(
            id: Int64, kind: String, personID: Int64?, name: String, latitude: Double, longitude: Double,
            street: String, city: String, country: String, rowVersion: Int64
        ) {
            self.id = id
            self.kind = kind
            self.personID = personID
            self.name = name
            self.latitude = latitude
            self.longitude = longitude
            self.street = street
            self.city = city
            self.country = country
            self.rowVersion = rowVersion
        }
    }

    /// A part of the catalogue (docs/dispatch.md, "Parts"): read-only on every device.
    public struct Part: Sendable, Codable, Equatable {
        public var id: Int64
        public var code: String
        public var name: String
        public var unit: String
        /// Exact decimal text (`12.50`), with its currency; nil when the part has no price.
        public var unitPrice: String?
        public var currency: String?
        /// Kept for the jobs that used it, no longer offered.
        public var retired: Bool
        public var rowVersion: Int64

        public init(
            id: Int64, code: String, name: String, unit: String, unitPrice: String?, currency: String?, retired: Bool, rowVersion: Int64
        ) {
            (self.id, self.code, self.name, self.unit, self.unitPrice, self.currency) = (id, code, name, unit, unitPrice, currency)
            (self.retired, self.rowVersion) = (retired, rowVersion)
        }
    }

    public var epoch: String
    public var refetch: Bool
    public var since: Int64
    public var upTo: Int64
    public var more: Bool
    public var people: [Person]
    public var teams: [Team]
    public var memberships: [Membership]
    public var locations: [Location]
    public var parts: [Part]
    /// Removed rows; a membership's id packs team and person as team * 2^32 + person.
    public var deleted: [ChangePage.Deletion]

    public init(
        epoch: String, refetch: Bool, since: Int64, upTo: Int64, more: Bool, people: [Person], teams: [Team],
        memberships: [Membership], locations: [Location], parts: [Part] = [], deleted: [ChangePage.Deletion]
    ) {
        self.parts = parts
        self.epoch = epoch
        self.refetch = refetch
        self.since = since
        self.upTo = upTo
        self.more = more
        self.people = people
        self.teams = teams
        self.memberships = memberships
        self.locations = locations
        self.deleted = deleted
    }

    enum CodingKeys: String, CodingKey {
        case epoch, refetch, since, upTo, more, people, teams, memberships, locations, parts, deleted
    }

    /// A server from before the catalogue travelled sends no `parts`: none, not an error.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            epoch: try c.decode(String.self, forKey: .epoch), refetch: try c.decode(Bool.self, forKey: .refetch),
            since: try c.decode(Int64.self, forKey: .since), upTo: try c.decode(Int64.self, forKey: .upTo),
            more: try c.decode(Bool.self, forKey: .more), people: try c.decode([Person].self, forKey: .people),
            teams: try c.decode([Team].self, forKey: .teams), memberships: try c.decode([Membership].self, forKey: .memberships),
            locations: try c.decode([Location].self, forKey: .locations),
            parts: try c.decodeIfPresent([Part].self, forKey: .parts) ?? [],
            deleted: try c.decode([ChangePage.Deletion].self, forKey: .deleted))
    }
}
