import Foundation

/// A place on the map: a task site or a person's last-known position.
public struct Location: Sendable, Codable, Equatable, Identifiable {
    public var id: Int64
    public var kind: LocationKind
    public var personID: Int64?
    public var name: String
    public var latitude: Double
    public var longitude: Double
    public var elevation: Double?
    public var address: Address
    public var createdAt: Date
    public var updatedAt: Date
    /// A site in a zone other than its tasks' teams' (`America/New_York`); nil: the team's.
    public var timeZone: String?

    public init(
        id: Int64, kind: LocationKind, personID: Int64?, name: String,
        latitude: Double, longitude: Double, elevation: Double?, address: Address,
        createdAt: Date, updatedAt: Date, timeZone: String? = nil
    ) {
        self.timeZone = timeZone
        self.id = id
        self.kind = kind
        self.personID = personID
        self.name = name
        self.latitude = latitude
        self.longitude = longitude
        self.elevation = elevation
        self.address = address
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// Street address parts; any of them may be empty.
public struct Address: Sendable, Codable, Equatable {
    public var street: String
    public var city: String
    public var region: String
    public var postalCode: String
    public var country: String

    public init(street: String = "", city: String = "", region: String = "", postalCode: String = "", country: String = "") {
        self.street = street
        self.city = city
        self.region = region
        self.postalCode = postalCode
        self.country = country
    }

    /// One line, the non-empty parts joined by commas.
    public var singleLine: String {
        [street, city, region, postalCode, country].filter { !$0.isEmpty }.joined(separator: ", ")
    }
}

/// A task site to create, validated on construction.
public struct NewLocation: Sendable, Equatable {
    public var name: String
    public var latitude: Double
    public var longitude: Double
    public var elevation: Double?
    public var address: Address
    public var timeZone: String?

    public init(
        name: String = "", latitude: Double, longitude: Double, elevation: Double? = nil, address: Address = Address(),
        timeZone: String? = nil
    ) throws {
        self.timeZone = try timeZone.map { try Zone($0).name }
        self.name = name
        self.latitude = try Validate.latitude(latitude)
        self.longitude = try Validate.longitude(longitude)
        if let elevation, !elevation.isFinite {
            throw TeamworkError.invalid("elevation must be a finite number of metres")
        }
        self.elevation = elevation
        self.address = address
    }
}
