import Foundation
import GRDB
import GRDBSQLite
#if canImport(Glibc)
import Glibc
#endif

/// The replica files in one folder: how they are built, swapped in, updated and read.
public struct ReplicaDirectory: Sendable {
    public let url: URL

    public init(_ url: URL) throws {
        _ = SQLiteProcess.configured
        self.url = url
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: retiredURL, withIntermediateDirectories: true)
    }

    public func path(of replica: ReplicaID) -> String { url.appending(path: replica.fileName).path }

    /// Where the files of removed teams are kept.
    public var retiredURL: URL { url.appending(path: "retired") }

    /// The replicas present in the folder.
    public func replicas() throws -> [ReplicaID] {
        try FileManager.default.contentsOfDirectory(atPath: url.path).compactMap(ReplicaID.init(fileName:)).sorted()
    }

    public func exists(_ replica: ReplicaID) -> Bool {
        FileManager.default.fileExists(atPath: path(of: replica))
    }

    /// Builds a new file for `replica` at a temporary path; ``ReplicaBuild/commit()``
    /// swaps it in atomically. Until then readers see the old file, and a crash
    /// leaves the old file intact (plus a temporary file the next build removes).
    ///
    /// With `connection`, the file is built on that connection (see ``BuildConnection``),
    /// which must not be building another file.
    public func startBuild(of replica: ReplicaID, feedPosition: Int64, generatedAt: Date = Date(),
                           memoryLimit: Int = ReplicaBuild.defaultMemoryLimit,
                           on connection: BuildConnection? = nil) throws -> ReplicaBuild {
        try ReplicaBuild(directory: self, replica: replica, feedPosition: feedPosition, generatedAt: generatedAt,
                         memoryLimit: memoryLimit, connection: connection)
    }

    /// Opens an existing replica for updating, or returns `nil` when there is none.
    /// A file of another schema version or that is damaged throws.
    public func open(_ replica: ReplicaID) throws -> DatabaseQueue? {
        guard exists(replica) else { return nil }
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        let queue = try DatabaseQueue(path: path(of: replica), configuration: configuration)
        var version = try queue.read { try Int.fetchOne($0, sql: "PRAGMA user_version") ?? 0 }
        if (1..<ReplicaSchema.version).contains(version) {
            try ReplicaSchema.upgrade(queue)
            version = try queue.read { try Int.fetchOne($0, sql: "PRAGMA user_version") ?? 0 }
        }
        guard version == ReplicaSchema.version else {
            throw ReplicaError("\(replica.fileName) has schema version \(version), expected \(ReplicaSchema.version)")
        }
        return queue
    }

    /// Runs `body` in one write transaction of an existing replica and records
    /// the feed position it now reflects.
    public func update<R>(_ queue: DatabaseQueue, _ replica: ReplicaID, feedPosition: Int64,
                          _ body: (ReplicaTransaction) throws -> R) throws -> R {
        try queue.write { db in
            let transaction = try ReplicaTransaction(db, replica: replica)
            let result = try body(transaction)
            try transaction.finish(feedPosition: feedPosition)
            return result
        }
    }

    /// The file the last rebuild of `replica` replaced, kept so that the next
    /// rebuild writes over it rather than making a new file: creating and
    /// deleting a thousand files per rebuild is a large part of a rebuild's
    /// kernel time (on ext4 without a journal, each new inode skips every
    /// inode deleted in the last hours). The price is one old copy per replica on disk.
    func sparePath(of replica: ReplicaID) -> String { path(of: replica) + ".spare" }

    /// Moves a replica's file aside into `retired/`, stamped with the time, rather than deleting it.
    public func retire(_ replica: ReplicaID) throws {
        unlink(sparePath(of: replica))
        guard exists(replica) else { return }
        let stamp = Int(Date().timeIntervalSince1970)
        let target = retiredURL.appending(path: "\(replica.fileName).\(stamp)")
        try? FileManager.default.removeItem(at: target)
        try FileManager.default.moveItem(atPath: path(of: replica), toPath: target.path)
    }

    /// Makes finished builds durable and swaps them in: an fsync per file (not
    /// sync(), which would flush every other program's writes too and was
    /// slower here), then a rename per file, then one fsync of the folder.
    /// Each rename is atomic: a reader sees the old file or the new one, never a mix.
    public func publish(_ finished: [FinishedReplica]) throws {
        guard !finished.isEmpty else { return }
        for file in finished { try ReplicaBuild.fsync(path: file.temporaryPath) }
        for file in finished {
            // Under the replica's lock, so no worker change pushed meanwhile is lost:
            // carried over again if the old file changed after the build read it.
            try withLock(file.replica) {
                if file.replica != .common, let version = FileVersion(path: file.finalPath), version != file.carriedOver {
                    try ReplicaBuild.carryOver(into: file.temporaryPath, from: file.finalPath)
                }
                // The replaced file stays as the next rebuild's spare (best effort).
                let spare = sparePath(of: file.replica)
                unlink(spare)
                _ = link(file.finalPath, spare)
                guard rename(file.temporaryPath, file.finalPath) == 0 else {
                    throw ReplicaError("cannot move the new \(file.replica.fileName) into place: \(String(cString: strerror(errno)))")
                }
            }
        }
        try ReplicaBuild.fsync(path: url.path)
    }

    /// Runs `body` holding the replica's lock (`NAME.lock`, flock): the sync
    /// endpoint's pushes and the swap of a rebuilt file exclude each other,
    /// across processes.
    public func withLock<R>(_ replica: ReplicaID, _ body: () throws -> R) throws -> R {
        let path = url.appending(path: replica.fileName + ".lock").path
        let fd = Glibc.open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ReplicaError("cannot open \(path)") }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw ReplicaError("cannot lock \(path)") }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }

    /// Applies a worker's pushed changes to a replica, in order, in one
    /// transaction under the replica's lock, and says what became of each.
    public func push(_ changes: [WorkerChange], to replica: ReplicaID, by personID: Int64,
                     receivedAt: Date = Date()) throws -> [WorkerChangeResult] {
        try withLock(replica) {
            guard let queue = try open(replica) else { throw ReplicaError("\(replica.fileName) has not been generated yet") }
            defer { try? queue.close() }
            return try update(queue, replica, feedPosition: 0) { tx in
                try changes.map { try tx.apply($0, by: personID, receivedAt: receivedAt) }
            }
        }
    }

    /// Removes temporary files left behind by interrupted builds.
    public func removeAbandonedBuilds() throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: url.path) where name.contains(".building-") {
            try? FileManager.default.removeItem(at: url.appending(path: name))
        }
    }
}

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

    init(directory: ReplicaDirectory, replica: ReplicaID, feedPosition: Int64, generatedAt: Date,
         memoryLimit: Int = ReplicaBuild.defaultMemoryLimit, connection: BuildConnection? = nil) throws {
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
            try db.cachedStatement(sql: """
                INSERT INTO meta (id, kind, owner_id, schema_version, epoch, feed_position, generated_at)
                VALUES (1, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [replica.kindName, replica.ownerID, ReplicaSchema.version, epoch, feedPosition,
                                         ReplicaTransaction.millis(generatedAt)])
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

    /// Writes the in-memory database `db` to `path`, which must not exist,
    /// over the `spare` file if it can be had.
    private static func writeOut(_ db: Database, to path: String, reusing spare: String?) throws {
        var size: sqlite3_int64 = 0
        // NOCOPY: the in-memory database's own buffer, no copy of it.
        guard let bytes = sqlite3_serialize(db.sqliteConnection, "main", &size, UInt32(SQLITE_SERIALIZE_NOCOPY)) else {
            throw ReplicaError("cannot serialize the new \(path)")
        }
        try write(UnsafeRawBufferPointer(start: bytes, count: Int(size)), to: path, reusing: spare)
    }

    /// Carries over into `db`, from the file being replaced, what only that
    /// file knows: worker changes not yet applied to the master, and the
    /// field's view of the tasks wherever the master has not changed those
    /// fields since. A damaged or incompatible old file has nothing usable to
    /// give and is left alone.
    static func carryOver(_ db: Database, from oldPath: String) throws {
        // Asked on a connection of its own: attaching and detaching the old file
        // would make the build connection prepare all its statements again.
        guard holdsWorkerChanges(oldPath) else { return }
        do {
            try db.execute(sql: "ATTACH DATABASE ? AS previous", arguments: [oldPath])
        } catch {
            return
        }
        defer { try? db.execute(sql: "DETACH DATABASE previous") }
        guard let previousVersion = try? Int.fetchOne(db, sql: "PRAGMA previous.user_version"),
              (1...ReplicaSchema.version).contains(previousVersion) else { return }
        let rejection = previousVersion >= 2 ? "rejection" : "NULL"
        // Deferred: an immediate transaction would also take the write lock of every
        // attached file, the common replica that all build connections attach included.
        try db.inTransaction(.deferred) {
            try db.execute(sql: """
                INSERT OR IGNORE INTO worker_changes
                    (position, change_id, person_id, task_id, operation, payload, made_at, received_at, rejection)
                SELECT position, change_id, person_id, task_id, operation, payload, made_at, received_at, \(rejection)
                FROM previous.worker_changes
                """)
            try db.execute(sql: """
                UPDATE main.tasks SET status = p.status, started_at = p.started_at, completed_at = p.completed_at,
                    completed_by = p.completed_by, completion_note = p.completion_note
                FROM previous.tasks AS p
                WHERE p.id = tasks.id
                  -- Only tasks a worker changed can differ: a lookup each, not a pass over every task.
                  AND p.id IN (SELECT task_id FROM previous.worker_changes)
                  AND (p.status, p.started_at, p.completed_at, p.completed_by, p.completion_note)
                      IS NOT (p.master_status, p.master_started_at, p.master_completed_at, p.master_completed_by,
                              p.master_completion_note)
                  AND (tasks.master_status, tasks.master_started_at, tasks.master_completed_at,
                       tasks.master_completed_by, tasks.master_completion_note)
                      IS (p.master_status, p.master_started_at, p.master_completed_at, p.master_completed_by,
                          p.master_completion_note)
                """)
            return .commit
        }
    }

    /// Whether the replica file at `path` has worker changes, and so may have
    /// something to carry over: only a worker's change makes a file's view of a
    /// task differ from the master's, and each is recorded in worker_changes in
    /// the same transaction (and carried over with it). `false` for a file that
    /// is damaged or of another schema; `true` when it is locked too long to tell.
    static func holdsWorkerChanges(_ path: String) -> Bool {
        var connection: OpaquePointer?
        defer { sqlite3_close_v2(connection) }
        guard sqlite3_open_v2(path, &connection, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK else {
            return false
        }
        sqlite3_busy_timeout(connection, 2000)
        func integer(_ sql: String) -> Int64? {
            var statement: OpaquePointer?
            defer { sqlite3_finalize(statement) }
            guard sqlite3_prepare_v2(connection, sql, -1, &statement, nil) == SQLITE_OK,
                  sqlite3_step(statement) == SQLITE_ROW else { return nil }
            return sqlite3_column_int64(statement, 0)
        }
        guard let version = integer("PRAGMA user_version") else { return isLocked(connection) }
        guard (1...Int64(ReplicaSchema.version)).contains(version) else { return false }
        guard let any = integer("SELECT EXISTS (SELECT 1 FROM worker_changes)") else { return isLocked(connection) }
        return any == 1
    }

    private static func isLocked(_ connection: OpaquePointer?) -> Bool {
        let code = sqlite3_errcode(connection) & 0xff
        return code == SQLITE_BUSY || code == SQLITE_LOCKED
    }

    /// Carries over again into a finished file, at `newPath`, from the file it
    /// replaces (see ``carryOver(_:from:)``): run under the replica's lock when
    /// the old file changed after the build carried over from it.
    static func carryOver(into newPath: String, from oldPath: String) throws {
        let queue = try DatabaseQueue(path: newPath)
        defer { try? queue.close() }
        try queue.writeWithoutTransaction { db in try carryOver(db, from: oldPath) }
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

    /// Creates `path` (it must not exist) holding `bytes`. With `spare`, the
    /// spare file is renamed to `path` and written over instead, if no one has
    /// it open (a write lease is granted only then) and it has no other name
    /// (a crash between keeping it and swapping in its successor leaves it
    /// linked as the live file too).
    static func write(_ bytes: UnsafeRawBufferPointer, to path: String, reusing spare: String?) throws {
        if let spare, rename(spare, path) == 0 {
            let fd = Glibc.open(path, O_WRONLY | O_CLOEXEC)
            if fd >= 0 {
                defer { close(fd) }
                var info = stat()
                if fstat(fd, &info) == 0, info.st_nlink == 1, fcntl(fd, Self.setLease, F_WRLCK) == 0 {
                    defer { _ = fcntl(fd, Self.setLease, F_UNLCK) }
                    try writeAll(bytes, to: fd, path: path)
                    guard ftruncate(fd, off_t(bytes.count)) == 0 else {
                        throw ReplicaError("cannot write \(path): \(String(cString: strerror(errno)))")
                    }
                    return
                }
            }
            unlink(path)
        }
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ReplicaError("cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        try writeAll(bytes, to: fd, path: path)
    }

    /// fcntl's F_SETLEASE (Linux), which Glibc's module does not export.
    private static let setLease: Int32 = 1024

    private static func writeAll(_ bytes: UnsafeRawBufferPointer, to fd: Int32, path: String) throws {
        var written = 0
        while written < bytes.count {
            let count = Glibc.write(fd, bytes.baseAddress! + written, bytes.count - written)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw ReplicaError("cannot write \(path): \(String(cString: strerror(errno)))") }
            written += count
        }
    }

    static func fsync(path: String) throws {
        let fd = Glibc.open(path, O_RDONLY)
        guard fd >= 0 else { throw ReplicaError("cannot open \(path) to sync it") }
        defer { close(fd) }
        guard Glibc.fsync(fd) == 0 else { throw ReplicaError("cannot sync \(path)") }
    }
}

/// Which version of a replica file is at a path: its inode, size, modification
/// time and SQLite's file change counter (bytes 24-27 of the header, bumped by
/// every committed write in rollback-journal mode, which replicas use). Two
/// equal versions mean nothing was written in between.
struct FileVersion: Equatable, Sendable {
    var inode: UInt64
    var size: Int64
    var modified: timespec
    var changeCounter: UInt32

    /// `nil` when there is no file at `path`.
    init?(path: String) {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        var counter: UInt32 = 0
        _ = pread(fd, &counter, 4, 24)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = info.st_mtim
        changeCounter = UInt32(bigEndian: counter)
    }

    static func == (a: FileVersion, b: FileVersion) -> Bool {
        a.inode == b.inode && a.size == b.size && a.changeCounter == b.changeCounter
            && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
    }
}
