import Foundation
import GRDB
import SyncProtocol

/// A last-known position the worker may see (their own, or a teammate's in a team that shares positions).
public struct LocalPosition: Sendable, Codable, Equatable {
    public var personID: Int64
    /// The teams through which the worker sees this person; empty for their own position.
    public var teamIDs: [Int64]
    public var latitude: Double
    public var longitude: Double
    public var reportedAt: Date
}

extension LocalStore {
    /// Replaces every position the device holds with what the server says the
    /// worker may see now: a position the worker may no longer see leaves the device.
    func replacePositions(_ listing: PositionListing) throws {
        try queue.write { db in
            try db.execute(sql: "DELETE FROM positions")
            for entry in listing.positions {
                try db.execute(
                    sql: "INSERT INTO positions VALUES (?, ?, ?, ?, ?)",
                    arguments: [
                        entry.person, entry.teams.map(String.init).joined(separator: ","), entry.latitude, entry.longitude,
                        entry.reportedAt.millisecondsSince1970,
                    ])
            }
        }
    }

    /// The positions held since the last sync, by person.
    public func positions() throws -> [LocalPosition] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT person_id, teams, latitude, longitude, reported_at FROM positions ORDER BY person_id").map {
                let teams = ($0["teams"] as String).split(separator: ",").compactMap { Int64($0) }
                return LocalPosition(
                    personID: $0["person_id"], teamIDs: teams, latitude: $0["latitude"], longitude: $0["longitude"],
                    reportedAt: Date(millisecondsSince1970: $0["reported_at"] as Int64))
            }
        }
    }
}
