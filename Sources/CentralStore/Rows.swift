import Foundation
import PostgresNIO
import TeamworkModel

/// Column lists, one per record, each column named after its record (`person_id`,
/// `person_first_name`, …) so that every query that returns a record selects the
/// same columns, and its decoder reads them by name wherever they stand in the row.
enum Columns {
    static let person =
        "p.id AS person_id, p.first_name AS person_first_name, p.last_name AS person_last_name, p.email AS person_email, p.role AS person_role, p.avatar_url AS person_avatar_url, p.default_team_id AS person_default_team_id, p.created_at AS person_created_at, p.updated_at AS person_updated_at, p.last_seen_at AS person_last_seen_at, p.skills AS person_skills, p.deactivated_at AS person_deactivated_at, p.home_location_id AS person_home_location_id"
    static let team =
        "t.id AS team_id, t.slug AS team_slug, t.name AS team_name, t.description AS team_description, t.color AS team_color, t.created_by AS team_created_by, t.created_at AS team_created_at, t.updated_at AS team_updated_at, t.shares_positions AS team_shares_positions, t.time_zone AS team_time_zone, t.depot_location_id AS team_depot_location_id, t.task_minutes AS team_task_minutes, t.travel_area AS team_travel_area"
    static let location =
        "l.id AS location_id, l.kind AS location_kind, l.person_id AS location_person_id, l.name AS location_name, l.latitude AS location_latitude, l.longitude AS location_longitude, l.elevation AS location_elevation, l.street AS location_street, l.city AS location_city, l.region AS location_region, l.postal_code AS location_postal_code, l.country AS location_country, l.created_at AS location_created_at, l.updated_at AS location_updated_at, l.time_zone AS location_time_zone"
    /// A task's columns as ``TaskSchema`` declares them, each named `task_<column>`.
    static let task = TaskSchema.columns.map(\.selected).joined(separator: ", ")
}

extension PostgresRandomAccessRow {
    func enumValue<E: RawRepresentable>(_ column: String, _ type: E.Type) throws -> E where E.RawValue == String {
        try enumValue(self[column], type)
    }

    private func enumValue<E: RawRepresentable>(_ cell: PostgresCell, _ type: E.Type) throws -> E where E.RawValue == String {
        let raw = try cell.decode(String.self)
        guard let value = E(rawValue: raw) else {
            throw TeamworkError(.internal, "unexpected \(E.self) value in the database")
        }
        return value
    }
}

extension Person {
    /// The columns of ``Columns/person``, wherever they stand in `row`.
    init(row: PostgresRow) throws {
        let r = PostgresRandomAccessRow(row)
        self.init(
            id: try r["person_id"].decode(Int64.self),
            firstName: try r["person_first_name"].decode(String.self),
            lastName: try r["person_last_name"].decode(String.self),
            email: try r["person_email"].decode(String.self),
            role: try r.enumValue("person_role", Role.self),
            avatarURL: try r["person_avatar_url"].decode(String?.self),
            defaultTeamID: try r["person_default_team_id"].decode(Int64?.self),
            createdAt: try r["person_created_at"].decode(Date.self),
            updatedAt: try r["person_updated_at"].decode(Date.self),
            lastSeenAt: try r["person_last_seen_at"].decode(Date?.self),
            skills: try r["person_skills"].decode([String].self),
            deactivatedAt: try r["person_deactivated_at"].decode(Date?.self),
            homeLocationID: try r["person_home_location_id"].decode(Int64?.self)
        )
    }
}

extension Team {
    /// The columns of ``Columns/team``, wherever they stand in `row`.
    init(row: PostgresRow) throws {
        let r = PostgresRandomAccessRow(row)
        self.init(
            id: try r["team_id"].decode(Int64.self),
            slug: try r["team_slug"].decode(String.self),
            name: try r["team_name"].decode(String.self),
            description: try r["team_description"].decode(String.self),
            color: try r["team_color"].decode(String?.self),
            createdBy: try r["team_created_by"].decode(Int64?.self),
            createdAt: try r["team_created_at"].decode(Date.self),
            updatedAt: try r["team_updated_at"].decode(Date.self),
            sharesPositions: try r["team_shares_positions"].decode(Bool.self), timeZone: try r["team_time_zone"].decode(String.self),
            depotLocationID: try r["team_depot_location_id"].decode(Int64?.self),
            taskMinutes: Int(try r["team_task_minutes"].decode(Int32.self)),
            travelArea: try r.enumValue("team_travel_area", TravelArea.self)
        )
    }
}

extension Location {
    init(row: PostgresRow) throws {
        try self.init(PostgresRandomAccessRow(row))
    }

    /// The columns of ``Columns/location``, wherever they stand in the row.
    init(_ r: PostgresRandomAccessRow) throws {
        self.init(
            id: try r["location_id"].decode(Int64.self),
            kind: try r.enumValue("location_kind", LocationKind.self),
            personID: try r["location_person_id"].decode(Int64?.self),
            name: try r["location_name"].decode(String.self),
            latitude: try r["location_latitude"].decode(Double.self),
            longitude: try r["location_longitude"].decode(Double.self),
            elevation: try r["location_elevation"].decode(Double?.self),
            address: Address(
                street: try r["location_street"].decode(String.self),
                city: try r["location_city"].decode(String.self),
                region: try r["location_region"].decode(String.self),
                postalCode: try r["location_postal_code"].decode(String.self),
                country: try r["location_country"].decode(String.self)
            ),
            createdAt: try r["location_created_at"].decode(Date.self),
            updatedAt: try r["location_updated_at"].decode(Date.self),
            timeZone: try r["location_time_zone"].decode(String?.self)
        )
    }

    /// The location of a row that LEFT JOINs one (nil when it has none).
    static func ifPresent(_ r: PostgresRandomAccessRow) throws -> Location? {
        guard try r["location_id"].decode(Int64?.self) != nil else { return nil }
        return try Location(r)
    }
}

extension FieldTask {
    init(row: PostgresRow) throws {
        try self.init(PostgresRandomAccessRow(row))
    }

    /// The columns of ``Columns/task``, wherever they stand in the row, each decoded as its
    /// ``TaskColumn/kind`` says.
    init(_ r: PostgresRandomAccessRow) throws {
        let values = try TaskSchema.columns.map { column -> TaskValue in
            let cell = r[column.selectedName]
            return switch column.kind {
            case .integer: .integer(try cell.decode(Int64?.self))
            case .text, .answers: .text(try cell.decode(String?.self))
            case .date: .date(try cell.decode(Date?.self))
            case .bool: .bool(try cell.decode(Bool?.self))
            }
        }
        try self.init(values: { TaskSchema.position[$0].map { values[$0] } ?? .null })
    }

    /// The window of the row; the database keeps both ends or neither, start before end.
    static func window(start: Date?, end: Date?) throws -> TimeWindow? {
        guard let start, let end else { return nil }
        return try TimeWindow(start: start, end: end)
    }
}

extension CentralStore {
    /// An ILIKE pattern for text that holds `text`, matched as text: %, _ and a backslash in it are themselves.
    static func containing(_ text: String) -> String {
        "%"
            + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
            .replacingOccurrences(of: "_", with: "\\_") + "%"
    }
}
