import Foundation
import GRDB
import SyncProtocol

extension CommonPage {
    public static func read(path: String, epoch: String?, since: Int64, limit: Int) throws -> CommonPage {
        precondition(limit > 0, "a page holds at least one row")
        return try readOnly(path: path) { db in
            let meta = try ReplicaMeta.read(db)
            guard meta.kind == "common" else { throw ReplicaError("not the common replica") }
            let window = try PageWindow(db, meta: meta, tables: ["people", "teams", "memberships", "locations", "deleted_rows"],
                                        epoch: epoch, since: since, limit: limit)
            let range: StatementArguments = [window.since, window.upTo]
            func rows(_ sql: String) throws -> [Row] {
                try Row.fetchAll(db, sql: sql + " WHERE row_version > ? AND row_version <= ? ORDER BY row_version", arguments: range)
            }
            return CommonPage(
                epoch: meta.epoch, refetch: window.refetch, since: window.since, upTo: window.upTo, more: window.more,
                people: try rows("SELECT id, first_name, last_name, role, avatar_url, row_version FROM people").map {
                    Person(id: $0[0], firstName: $0[1], lastName: $0[2], role: $0[3], avatarURL: $0[4], rowVersion: $0[5])
                },
                teams: try rows("SELECT id, slug, name, description, color, row_version FROM teams").map {
                    Team(id: $0[0], slug: $0[1], name: $0[2], description: $0[3], color: $0[4], rowVersion: $0[5])
                },
                memberships: try rows("SELECT team_id, person_id, row_version FROM memberships").map {
                    Membership(teamID: $0[0], personID: $0[1], rowVersion: $0[2])
                },
                locations: try rows(
                    "SELECT id, kind, person_id, name, latitude, longitude, street, city, country, row_version FROM locations"
                ).map {
                    Location(id: $0[0], kind: $0[1], personID: $0[2], name: $0[3], latitude: $0[4], longitude: $0[5],
                             street: $0[6], city: $0[7], country: $0[8], rowVersion: $0[9])
                },
                deleted: window.refetch ? [] : try rows("SELECT table_name, row_id, row_version FROM deleted_rows").map {
                    ChangePage.Deletion(table: $0[0], id: $0[1], rowVersion: $0[2])
                }
            )
        }
    }
}
