import Foundation

/// `GET /v1/positions`: the last-known positions the caller may see: their own,
/// and their teammates' in the teams that share positions. Nobody else's.
public struct PositionListing: Sendable, Codable, Equatable {
    public struct Entry: Sendable, Codable, Equatable {
        public var person: Int64
        /// The caller's teams through which they see this person (empty for the caller's own position).
        public var teams: [Int64]
        public var latitude: Double
        public var longitude: Double
        /// When the person checked in there.
        public var reportedAt: Date

        public init(person: Int64, teams: [Int64], latitude: Double, longitude: Double, reportedAt: Date) {
            self.person = person
            self.teams = teams
            self.latitude = latitude
            self.longitude = longitude
            self.reportedAt = reportedAt
        }
    }

    public var person: Int64
    public var positions: [Entry]

    public init(person: Int64, positions: [Entry]) {
        self.person = person
        self.positions = positions
    }
}
