import Foundation

/// A user of Teamwork: a manager, a field worker or an administrator.
public struct Person: Sendable, Codable, Equatable, Identifiable {
    public var id: Int64
    public var firstName: String
    public var lastName: String
    public var email: String
    public var role: Role
    public var avatarURL: String?
    public var defaultTeamID: Int64?
    public var createdAt: Date
    public var updatedAt: Date
    public var lastSeenAt: Date?
    /// What the person can do (see ``Skills``), sorted.
    public var skills: [String]
    /// When the person left (`person deactivate`); nil while they are active.
    public var deactivatedAt: Date?
    /// Where they start and end a working day (a site); nil: their team's depot.
    public var homeLocationID: Int64?

    public init(
        id: Int64, firstName: String, lastName: String, email: String, role: Role,
        avatarURL: String? = nil, defaultTeamID: Int64? = nil,
        createdAt: Date, updatedAt: Date, lastSeenAt: Date? = nil, skills: [String] = [], deactivatedAt: Date? = nil,
        homeLocationID: Int64? = nil
    ) {
        self.homeLocationID = homeLocationID
        self.deactivatedAt = deactivatedAt
        self.id = id
        self.firstName = firstName
        self.lastName = lastName
        self.email = email
        self.role = role
        self.avatarURL = avatarURL
        self.defaultTeamID = defaultTeamID
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.lastSeenAt = lastSeenAt
        self.skills = skills
    }

    public var displayName: String { "\(firstName) \(lastName)" }

    /// Whether the person may sign in and be given work.
    public var isActive: Bool { deactivatedAt == nil }
}

/// The fields of a person to create, validated on construction.
public struct NewPerson: Sendable, Equatable {
    public var firstName: String
    public var lastName: String
    public var email: String
    public var role: Role
    public var avatarURL: String?
    public var skills: [String]

    public init(
        firstName: String, lastName: String, email: String, role: Role, avatarURL: String? = nil, skills: [String] = []
    ) throws {
        self.firstName = try Validate.name(firstName, field: "first name")
        self.lastName = try Validate.name(lastName, field: "last name")
        self.email = try Validate.email(email)
        self.role = role
        self.avatarURL = try avatarURL.map(Validate.url)
        self.skills = skills
    }
}

/// Changes to a person; `nil` leaves a field as it is.
public struct PersonChanges: Sendable, Equatable {
    public var firstName: String?
    public var lastName: String?
    public var email: String?
    public var role: Role?
    /// `.some(nil)` clears the avatar.
    public var avatarURL: String??
    /// `.some(nil)` clears the default team.
    public var defaultTeamID: Int64??
    /// Replaces the person's skills.
    public var skills: [String]?
    /// `.some(nil)` clears their place (they start from their team's depot).
    public var homeLocationID: Int64??

    public init(
        firstName: String? = nil, lastName: String? = nil, email: String? = nil, role: Role? = nil,
        avatarURL: String?? = nil, defaultTeamID: Int64?? = nil, skills: [String]? = nil, homeLocationID: Int64?? = nil
    ) throws {
        self.homeLocationID = homeLocationID
        self.firstName = try firstName.map { try Validate.name($0, field: "first name") }
        self.lastName = try lastName.map { try Validate.name($0, field: "last name") }
        self.email = try email.map(Validate.email)
        self.role = role
        if case .some(.some(let url)) = avatarURL {
            self.avatarURL = .some(try Validate.url(url))
        } else {
            self.avatarURL = avatarURL
        }
        self.defaultTeamID = defaultTeamID
        self.skills = skills
    }

    public var isEmpty: Bool {
        firstName == nil && lastName == nil && email == nil && role == nil && avatarURL == nil && defaultTeamID == nil
            && skills == nil && homeLocationID == nil
    }
}
