import Foundation
import GRDB
import SyncProtocol
import TeamworkModel

extension ChangePage {
    /// Reads one page, at most `limit` rows in all, from one consistent read of the file.
    public static func read(path: String, epoch clientEpoch: String?, since clientPosition: Int64, limit: Int) throws -> ChangePage {
        precondition(limit > 0, "a page holds at least one row")
        return try readOnly(path: path) { db in
            let meta = try ReplicaMeta.read(db)
            guard meta.kind != "common" else { throw ReplicaError("the common replica has its own page format") }
            let window = try PageWindow(
                db, meta: meta, tables: ["tasks", "members", "locations", "deleted_rows", "refusals"],
                epoch: clientEpoch, since: clientPosition, limit: limit)
            let (refetch, since, upTo, more) = (window.refetch, window.since, window.upTo, window.more)
            let range: StatementArguments = [since, upTo]
            let reader = try ReplicaTaskReader(db, fieldOnly: true)
            let tasks = try Row.fetchAll(
                db, sql: "SELECT \(reader.selected) FROM tasks WHERE row_version > ? AND row_version <= ? ORDER BY row_version",
                arguments: range
            ).map { try Task(ReplicaTaskReader.asTheFieldSays($0), rowVersion: $0["row_version"]) }
            let members = try Row.fetchAll(
                db,
                sql: """
                    SELECT person_id, first_name, last_name, role, row_version, skills FROM members
                    WHERE row_version > ? AND row_version <= ? ORDER BY row_version
                    """, arguments: range
            ).map {
                Member(
                    personID: $0["person_id"], firstName: $0["first_name"], lastName: $0["last_name"], role: $0["role"],
                    rowVersion: $0["row_version"],
                    skills: ($0["skills"] as String).split(separator: ",").map(String.init))
            }
            let refused = try Row.fetchAll(
                db,
                sql: """
                    SELECT person_id, change_id, task_id, operation, rule, reason, decided_at, row_version, decision FROM refusals
                    WHERE row_version > ? AND row_version <= ? ORDER BY row_version
                    """, arguments: range
            ).map {
                Refusal(
                    personID: $0["person_id"], changeID: $0["change_id"], taskID: $0["task_id"], operation: $0["operation"],
                    rule: $0["rule"], reason: $0["reason"],
                    decidedAt: $0["decided_at"], rowVersion: $0["row_version"], decision: $0["decision"])
            }
            let locations = try Row.fetchAll(
                db,
                sql: """
                    SELECT id, name, latitude, longitude, elevation, street, city, region, postal_code, country, row_version
                    FROM locations WHERE row_version > ? AND row_version <= ? ORDER BY row_version
                    """, arguments: range
            ).map { r in
                Location(
                    id: r["id"], name: r["name"], latitude: r["latitude"], longitude: r["longitude"], elevation: r["elevation"],
                    street: r["street"], city: r["city"],
                    region: r["region"], postalCode: r["postal_code"], country: r["country"], rowVersion: r["row_version"])
            }
            // A client that refetches starts from nothing: tombstones mean nothing to it.
            let deleted =
                refetch
                ? []
                : try Row.fetchAll(
                    db,
                    sql: """
                        SELECT table_name, row_id, row_version FROM deleted_rows
                        WHERE row_version > ? AND row_version <= ? ORDER BY row_version
                        """, arguments: range
                ).map { Deletion(table: $0["table_name"], id: $0["row_id"], rowVersion: $0["row_version"]) }
            return ChangePage(
                epoch: meta.epoch, refetch: refetch, since: since, upTo: upTo, more: more,
                tasks: tasks, members: members, locations: locations, deleted: deleted, refused: refused
            )
        }
    }
}

/// Which positions one page covers: after `since` (0 on a refetch) up to the
/// `limit`-th smallest position among `tables`, or the file's counter when fewer remain.
struct PageWindow {
    var refetch: Bool
    var since: Int64
    var upTo: Int64
    var more: Bool

    init(_ db: Database, meta: ReplicaMeta, tables: [String], epoch: String?, since clientPosition: Int64, limit: Int) throws {
        refetch = epoch != meta.epoch || clientPosition < 0 || clientPosition > meta.rowCounter
        since = refetch ? 0 : clientPosition
        let union = tables.map { "SELECT row_version FROM \($0) WHERE row_version > ?1" }.joined(separator: " UNION ALL ")
        let cut = try Int64.fetchOne(
            db, sql: "SELECT row_version FROM (\(union)) ORDER BY row_version LIMIT 1 OFFSET ?2",
            arguments: [since, limit - 1])
        let exists = tables.map { "EXISTS (SELECT 1 FROM \($0) WHERE row_version > ?1)" }.joined(separator: " OR ")
        more = try cut.map { try Bool.fetchOne(db, sql: "SELECT \(exists)", arguments: [$0]) ?? false } ?? false
        upTo = more ? cut! : meta.rowCounter
    }
}
