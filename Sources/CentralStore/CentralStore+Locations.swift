import Foundation
import PostgresNIO
import TeamworkModel

extension CentralStore {
    public func addLocation(_ new: NewLocation) async throws -> Location {
        try await transaction { connection in
            let rows = try await connection.query(
                """
                INSERT INTO locations AS l (kind, name, latitude, longitude, elevation, street, city, region, postal_code, country, time_zone)
                VALUES ('site', \(new.name), \(new.latitude), \(new.longitude), \(new.elevation), \(new.address.street),
                        \(new.address.city), \(new.address.region), \(new.address.postalCode), \(new.address.country), \(new.timeZone))
                RETURNING \(unescaped: Columns.location)
                """,
                logger: logger
            ).collect()
            return try Location(row: rows[0])
        }
    }

    /// Locations of one kind (or all), newest first.
    public func listLocations(kind: LocationKind? = nil) async throws -> [Location] {
        try await rows(
            """
            SELECT \(unescaped: Columns.location) FROM locations l
            WHERE \(kind?.rawValue)::text IS NULL OR l.kind = \(kind?.rawValue)
            ORDER BY l.id
            """
        ).map(Location.init(row:))
    }

    public func location(id: Int64) async throws -> Location {
        let found = try await rows("SELECT \(unescaped: Columns.location) FROM locations l WHERE l.id = \(id)")
        guard let row = found.first else { throw TeamworkError.notFound("no location with id \(id)") }
        return try Location(row: row)
    }
}
