import Foundation
import GRDB
import GRDBSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// A built replica file waiting to be swapped in.
public struct FinishedReplica: Sendable {
    public var replica: ReplicaID
    /// Where the file is until it is published.
    public internal(set) var temporaryPath: String
    var finalPath: String
    /// The file being replaced, as it was when its worker changes and the
    /// field's view were carried over into the new file (`nil`: there was none).
    var carriedOver: FileVersion?

    /// Removes the file instead of publishing it.
    public func discard() {
        unlink(temporaryPath)
    }
}

/// An in-memory SQLite connection that builds team and personal files one
/// after another, for a full rebuild's build thread. Each file starts as a
/// copy of the empty replica deserialized over the last one; the schema stays
/// the same, so the statements stay prepared, and the common replica whose
/// locations the files copy is attached once: a connection, a dozen statements
/// to parse and an attached schema per file were a fifth of a rebuild's CPU.
/// Used by one thread at a time. Statements run on it must not use
/// table-valued functions such as `pragma_page_count`: SQLite 3.40 keeps those
/// tables pointing at the schema of the first file, freed when the next is loaded.
public final class BuildConnection {
    let queue: DatabaseQueue
    /// The common replica attached as `common`, if any.
    let locationsFrom: String?
    /// Whether an empty replica was loaded yet (the first load clears GRDB's caches).
    var loaded = false

    /// `locationsFrom`: the path of a finished common replica whose locations
    /// the files' tasks point at.
    public init(locationsFrom common: String?) throws {
        queue = try DatabaseQueue(configuration: ReplicaBuild.configuration)
        locationsFrom = common
        if let common {
            try queue.inDatabase { db in try db.execute(sql: "ATTACH DATABASE ? AS common", arguments: [common]) }
        }
    }

    public func close() {
        try? queue.close()
    }
}

/// A replica file being built from scratch; nothing is visible until it is published.
///
/// The new file is built in memory (a copy of an empty replica, deserialized)
/// and written out once, when finished: SQLite then does no file I/O of its own,
/// which is most of the cost of a thousand small files. A file that outgrows
/// `memoryLimit` moves to its temporary path and is finished there, so memory
/// stays flat whatever a team's task count.
public final class ReplicaBuild {
    public let replica: ReplicaID
    public let epoch: String
    let directory: ReplicaDirectory
    let temporaryPath: String
    let feedPosition: Int64
    let memoryLimit: Int
    private var queue: DatabaseQueue
    /// The reused connection the file is built on while in memory; `nil` when
    /// the build has its own connection (closed when done).
    private var connection: BuildConnection?
    /// The common replica the reused connection has attached, if any: a file
    /// that moves to its temporary path copies its locations from there too.
    private let attachedCommon: String?
    private var inMemory = true
    private var transaction: ReplicaTransaction?
    /// The row counter to carry on from after moving to the temporary file.
    private var counter: Int64 = 0

    /// The limit a build is kept in memory under, by default.
    public static let defaultMemoryLimit = 16 << 20

    init(
        directory: ReplicaDirectory, replica: ReplicaID, feedPosition: Int64, generatedAt: Date,
        memoryLimit: Int = ReplicaBuild.defaultMemoryLimit, connection: BuildConnection? = nil
    ) throws {
        // A connection's statements are prepared for team files: the common replica has its own schema.
        precondition(connection == nil || replica != .common, "the common replica is built on its own connection")
        self.directory = directory
        self.replica = replica
        self.feedPosition = feedPosition
        self.memoryLimit = memoryLimit
        self.connection = connection
        attachedCommon = connection?.locationsFrom
        epoch = UUID().uuidString.lowercased()
        temporaryPath = directory.path(of: replica) + ".building-\(epoch)"
        queue = try connection?.queue ?? DatabaseQueue(configuration: Self.configuration)
        let firstLoad = !(connection?.loaded ?? false)
        try queue.inDatabase { db in
            try ReplicaSchema.loadEmpty(for: replica, into: db, clearingCaches: firstLoad)
            try Self.prepare(db)
            try db.cachedStatement(
                sql: """
                    INSERT INTO meta (id, kind, owner_id, schema_version, epoch, feed_position, generated_at)
                    VALUES (1, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: [
                replica.kindName, replica.ownerID, ReplicaSchema.version, epoch, feedPosition,
                generatedAt.millisecondsSince1970,
            ])
        }
        connection?.loaded = true
    }

    static var configuration: Configuration {
        var configuration = Configuration()
        // One transaction spans the whole build, across many write calls.
        configuration.allowsUnsafeTransactions = true
        configuration.foreignKeysEnabled = false  // the replica schema has none
        return configuration
    }

    /// Built once, then fsynced and renamed: no journal, no syncs while writing.
    private static func prepare(_ db: Database) throws {
        for sql in ["PRAGMA journal_mode = OFF", "PRAGMA synchronous = OFF", "PRAGMA cache_size = -16000", "BEGIN"] {
            try db.cachedStatement(sql: sql).execute()
        }
    }

    /// Writes rows into the new file. Runs on the caller's thread, inside the
    /// build's one transaction.
    public func write(_ body: (ReplicaTransaction) throws -> Void) throws {
        let outgrown = try queue.inDatabase { db in
            if transaction == nil { transaction = try ReplicaTransaction(db, replica: replica, fresh: true, counter: counter) }
            try body(transaction!)
            guard inMemory else { return false }
            // Not the pragma_page_count table: SQLite (3.40) keeps such a table pointing at the
            // schema of the database it was first used with, which a reused connection
            // replaces with each new file, and preparing it again then reads freed memory.
            let pages = try Int.fetchOne(db.cachedStatement(sql: "PRAGMA page_count")) ?? 0
            return pages * ReplicaSchema.pageSize > memoryLimit
        }
        if outgrown { try moveToFile() }
    }

    /// Writes what is built so far to the temporary path and goes on there.
    private func moveToFile() throws {
        try queue.inDatabase { db in
            counter = transaction?.rowCounter ?? counter
            try db.cachedStatement(sql: "COMMIT").execute()
            try Self.writeOut(db, to: temporaryPath, reusing: directory.sparePath(of: replica))
        }
        transaction = nil
        releaseConnection()
        inMemory = false
        queue = try DatabaseQueue(path: temporaryPath, configuration: Self.configuration)
        try queue.inDatabase(Self.prepare)
    }

    /// Closes the build's own connection, or gives the reused one back.
    private func releaseConnection() {
        if connection == nil { try? queue.close() }
        connection = nil
    }

    /// Finishes and swaps in this one file.
    public func commit() throws {
        try directory.publish([try finish()])
    }

    /// Commits and closes the new file, carrying over what only the file it
    /// replaces knows (see ``carryOver(_:from:)``). It becomes visible with
    /// ``ReplicaDirectory/publish(_:)``, which carries over again whatever
    /// reached the old file since. With `locationsFrom`, the path of a common
    /// replica, the locations of the file's tasks are copied from there (by
    /// default, from the common replica the build's ``BuildConnection`` has attached).
    public func finish(locationsFrom common: String? = nil) throws -> FinishedReplica {
        let finalPath = directory.path(of: replica)
        let common = common ?? attachedCommon
        let onConnection = connection != nil && common == attachedCommon
        let carriedOver = try queue.inDatabase { db -> FileVersion? in
            if transaction == nil { transaction = try ReplicaTransaction(db, replica: replica, fresh: true, counter: counter) }
            try db.cachedStatement(sql: "COMMIT").execute()
            if onConnection, common != nil {
                try transaction!.copyLocationsOfTasks()
            } else if let common {
                try db.execute(sql: "ATTACH DATABASE ? AS common", arguments: [common])
                defer { try? db.execute(sql: "DETACH DATABASE common") }
                try transaction!.copyLocationsOfTasks()
            }
            try transaction!.finish(feedPosition: feedPosition)
            var carriedOver: FileVersion?
            if replica != .common, let version = FileVersion(path: finalPath) {
                try Self.carryOver(db, from: finalPath)
                carriedOver = version
            }
            if inMemory { try Self.writeOut(db, to: temporaryPath, reusing: directory.sparePath(of: replica)) }
            return carriedOver
        }
        transaction = nil
        releaseConnection()
        return FinishedReplica(replica: replica, temporaryPath: temporaryPath, finalPath: finalPath, carriedOver: carriedOver)
    }

    /// Gives up on the build and removes the temporary file.
    public func abandon() {
        transaction = nil
        if connection != nil {
            // The reused connection is left with no transaction open, ready for another file.
            try? queue.inDatabase { db in if db.isInsideTransaction { try db.execute(sql: "ROLLBACK") } }
        }
        releaseConnection()
        unlink(temporaryPath)
    }
}
