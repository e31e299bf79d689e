import Foundation
import PostgresNIO
import TeamworkModel

/// Column lists and row decoders, one per record, so every query that returns a
/// record selects the same columns in the same order.
enum Columns {
    static let person = "p.id, p.first_name, p.last_name, p.email, p.role, p.avatar_url, p.default_team_id, p.created_at, p.updated_at, p.last_seen_at, p.skills, p.deactivated_at"
    /// How many columns ``person`` has: what follows them in a row starts here.
    static let personCount = 12
    static let team = "t.id, t.slug, t.name, t.description, t.color, t.created_by, t.created_at, t.updated_at, t.shares_positions, t.time_zone"
    /// How many columns ``team`` has: what follows them in a row starts here.
    static let teamCount = 10
    static let location = "l.id, l.kind, l.person_id, l.name, l.latitude, l.longitude, l.elevation, l.street, l.city, l.region, l.postal_code, l.country, l.created_at, l.updated_at, l.time_zone"
    static let task = "k.id, k.title, k.description, k.priority, k.status, k.team_id, k.assignee_id, k.location_id, k.due_at, k.created_by, k.created_at, k.updated_at, k.started_at, k.completed_at, k.completed_by, k.completion_note, k.version, k.required_skills, k.window_start, k.window_end, k.time_zone, k.plan_id, k.plan_date::text, \(checklistForm), k.answers::text"
    /// How many columns ``task`` has: what follows them in a row starts here.
    static let taskCount = 25
    /// The checklist version task `k` carries, as the JSON of a ``ChecklistForm`` (NULL when none).
    static let checklistForm = """
        CASE WHEN k.checklist_id IS NOT NULL THEN
            (SELECT jsonb_build_object('name', c.name, 'version', v.version, 'items', v.items)::text
               FROM checklist_versions v JOIN checklists c ON c.id = v.checklist_id
              WHERE v.checklist_id = k.checklist_id AND v.version = k.checklist_version) END
        """
}

extension PostgresRandomAccessRow {
    func enumValue<E: RawRepresentable>(_ column: Int, _ type: E.Type) throws -> E where E.RawValue == String {
        let raw = try self[column].decode(String.self)
        guard let value = E(rawValue: raw) else {
            throw TeamworkError(.internal, "unexpected \(E.self) value in the database")
        }
        return value
    }
}

extension Person {
    init(row: PostgresRow) throws { try self.init(row: row, skipping: 0) }

    /// `skipping`: columns before the person's own (a query that selects more first).
    init(row: PostgresRow, skipping o: Int) throws {
        let r = PostgresRandomAccessRow(row)
        self.init(
            id: try r[o + 0].decode(Int64.self),
            firstName: try r[o + 1].decode(String.self),
            lastName: try r[o + 2].decode(String.self),
            email: try r[o + 3].decode(String.self),
            role: try r.enumValue(o + 4, Role.self),
            avatarURL: try r[o + 5].decode(String?.self),
            defaultTeamID: try r[o + 6].decode(Int64?.self),
            createdAt: try r[o + 7].decode(Date.self),
            updatedAt: try r[o + 8].decode(Date.self),
            lastSeenAt: try r[o + 9].decode(Date?.self),
            skills: try r[o + 10].decode([String].self),
            deactivatedAt: try r[o + 11].decode(Date?.self)
        )
    }
}

extension Team {
    init(row: PostgresRow) throws {
        let r = PostgresRandomAccessRow(row)
        self.init(
            id: try r[0].decode(Int64.self),
            slug: try r[1].decode(String.self),
            name: try r[2].decode(String.self),
            description: try r[3].decode(String.self),
            color: try r[4].decode(String?.self),
            createdBy: try r[5].decode(Int64?.self),
            createdAt: try r[6].decode(Date.self),
            updatedAt: try r[7].decode(Date.self),
            sharesPositions: try r[8].decode(Bool.self), timeZone: try r[9].decode(String.self)
        )
    }
}

extension Location {
    init(row: PostgresRow) throws {
        try self.init(PostgresRandomAccessRow(row), from: 0)
    }

    /// Decodes the columns of ``Columns/location`` starting at `i`.
    init(_ r: PostgresRandomAccessRow, from i: Int) throws {
        self.init(
            id: try r[i].decode(Int64.self),
            kind: try r.enumValue(i + 1, LocationKind.self),
            personID: try r[i + 2].decode(Int64?.self),
            name: try r[i + 3].decode(String.self),
            latitude: try r[i + 4].decode(Double.self),
            longitude: try r[i + 5].decode(Double.self),
            elevation: try r[i + 6].decode(Double?.self),
            address: Address(
                street: try r[i + 7].decode(String.self),
                city: try r[i + 8].decode(String.self),
                region: try r[i + 9].decode(String.self),
                postalCode: try r[i + 10].decode(String.self),
                country: try r[i + 11].decode(String.self)
            ),
            createdAt: try r[i + 12].decode(Date.self),
            updatedAt: try r[i + 13].decode(Date.self),
            timeZone: try r[i + 14].decode(String?.self)
        )
    }
}

extension FieldTask {
    init(row: PostgresRow) throws {
        try self.init(PostgresRandomAccessRow(row))
    }

    init(_ r: PostgresRandomAccessRow) throws {
        self.init(
            id: try r[0].decode(Int64.self),
            title: try r[1].decode(String.self),
            description: try r[2].decode(String.self),
            priority: try r.enumValue(3, Priority.self),
            status: try r.enumValue(4, TaskStatus.self),
            teamID: try r[5].decode(Int64?.self),
            assigneeID: try r[6].decode(Int64?.self),
            locationID: try r[7].decode(Int64?.self),
            dueAt: try r[8].decode(Date?.self),
            createdBy: try r[9].decode(Int64?.self),
            createdAt: try r[10].decode(Date.self),
            updatedAt: try r[11].decode(Date.self),
            startedAt: try r[12].decode(Date?.self),
            completedAt: try r[13].decode(Date?.self),
            completedBy: try r[14].decode(Int64?.self),
            completionNote: try r[15].decode(String?.self),
            version: Int(try r[16].decode(Int32.self)),
            requiredSkills: try r[17].decode([String].self),
            window: try Self.window(start: r[18].decode(Date?.self), end: r[19].decode(Date?.self)),
            timeZone: try r[20].decode(String.self),
            planID: try r[21].decode(Int64?.self),
            planDate: try r[22].decode(String?.self).map { try LocalDate(parsing: $0) },
            checklist: try FieldTask.checklist(json: r[23].decode(String?.self)),
            answers: try FieldTask.answers(json: r[24].decode(String?.self))
        )
    }

    /// The window of the row; the database keeps both ends or neither, start before end.
    static func window(start: Date?, end: Date?) throws -> TimeWindow? {
        guard let start, let end else { return nil }
        return try TimeWindow(start: start, end: end)
    }
}
