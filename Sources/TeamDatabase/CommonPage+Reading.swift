import Foundation
import GRDB
import SyncProtocol

extension CommonPage {
    public static func read(path: String, epoch: String?, since: Int64, limit: Int) throws -> CommonPage {
        precondition(limit > 0, "a page holds at least one row")
        return try readOnly(path: path) { db in
            let meta = try ReplicaMeta.read(db)
            guard meta.kind == "common" else { throw ReplicaError("not the common replica") }
            let window = try PageWindow(
                db, meta: meta, tables: ["people", "teams", "memberships", "locations", "parts", "deleted_rows"],
                epoch: epoch, since: since, limit: limit)
            let range: StatementArguments = [window.since, window.upTo]
            func rows(_ sql: String) throws -> [Row] {
                try Row.fetchAll(db, sql: sql + " WHERE row_version > ? AND row_version <= ? ORDER BY row_version", arguments: range)
            }
            return CommonPage(
                epoch: meta.epoch, refetch: window.refetch, since: window.since, upTo: window.upTo, more: window.more,
                people: try rows("SELECT id, first_name, last_name, role, avatar_url, row_version FROM people").map {
                    Person(
                        id: $0["id"], firstName: $0["first_name"], lastName: $0["last_name"], role: $0["role"], avatarURL: $0["avatar_url"],
                        rowVersion: $0["row_version"])
                },
                teams: try rows("SELECT id, slug, name, description, color, row_version FROM teams").map {
                    Team(
                        id: $0["id"], slug: $0["slug"], name: $0["name"], description: $0["description"], color: $0["color"],
                        rowVersion: $0["row_version"])
                },
                memberships: try rows("SELECT team_id, person_id, row_version FROM memberships").map {
                    Membership(teamID: $0["team_id"], personID: $0["person_id"], rowVersion: $0["row_version"])
                },
                locations: try rows(
                    "SELECT id, kind, person_id, name, latitude, longitude, street, city, country, row_version FROM locations"
                ).map {
                    Location(
                        id: $0["id"], kind: $0["kind"], personID: $0["person_id"], name: $0["name"], latitude: $0["latitude"],
                        longitude: $0["longitude"],
                        street: $0["street"], city: $0["city"], country: $0["country"], rowVersion: $0["row_version"])
                },
                parts: try rows("SELECT id, code, name, unit, unit_price, currency, retired, row_version FROM parts").map {
                    Part(
                        id: $0["id"], code: $0["code"], name: $0["name"], unit: $0["unit"], unitPrice: $0["unit_price"],
                        currency: $0["currency"], retired: ($0["retired"] as Int64) != 0, rowVersion: $0["row_version"])
                },
                deleted: window.refetch
                    ? []
                    : try rows("SELECT table_name, row_id, row_version FROM deleted_rows").map {
                        ChangePage.Deletion(table: $0["table_name"], id: $0["row_id"], rowVersion: $0["row_version"])
                    }
            )
        }
    }
}
