import Foundation
import GRDB

/// The metadata record of a replica.
public struct ReplicaMeta: Sendable, Equatable, Codable {
    public var kind: String
    public var ownerID: Int64
    public var schemaVersion: Int
    /// Changes whenever the file is rebuilt from scratch: a client holding another
    /// epoch must refetch rather than apply deltas.
    public var epoch: String
    /// The master change-feed position this replica reflects.
    public var feedPosition: Int64
    public var generatedAt: Date
    /// The last `row_version` handed out in this file.
    public var rowCounter: Int64
    public var name: String
    public var slug: String

    /// Reads the metadata record of any replica file (team, personal or common).
    public static func read(path: String) throws -> ReplicaMeta {
        try readOnly(path: path, read)
    }

    static func read(_ db: Database) throws -> ReplicaMeta {
        guard
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT kind, owner_id, schema_version, epoch, feed_position, generated_at, row_counter, name, slug FROM meta
                    """)
        else {
            throw ReplicaError("the replica has no metadata record")
        }
        return ReplicaMeta(
            kind: row["kind"], ownerID: row["owner_id"], schemaVersion: row["schema_version"], epoch: row["epoch"],
            feedPosition: row["feed_position"],
            generatedAt: Date(millisecondsSince1970: row["generated_at"] as Int64), rowCounter: row["row_counter"],
            name: row["name"], slug: row["slug"]
        )
    }
}

/// Opens a replica file read-only, runs `body` in one read transaction, closes it.
func readOnly<T>(path: String, _ body: (Database) throws -> T) throws -> T {
    var configuration = Configuration()
    configuration.readonly = true
    configuration.busyMode = .timeout(10)
    let queue = try DatabaseQueue(path: path, configuration: configuration)
    defer { try? queue.close() }
    return try queue.read(body)
}

/// A replica file that cannot be used: missing, damaged, or of another schema.
public struct ReplicaError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A replica's lock was not free in time: someone else is writing it (or holds its lock file).
public struct ReplicaBusy: Error, Sendable, CustomStringConvertible {
    public var replica: ReplicaID
    public var description: String { "\(replica.fileName) is locked by another writer" }

    public init(replica: ReplicaID) {
        self.replica = replica
    }
}
