import Foundation
import GRDB
import GRDBSQLite
import TeamworkModel

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
        // The replicas hold every team's tasks: only the service's own user may read them or hold their locks.
        chmod(url.path, 0o700)
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
    public func startBuild(
        of replica: ReplicaID, feedPosition: Int64, generatedAt: Date = Date(),
        memoryLimit: Int = ReplicaBuild.defaultMemoryLimit,
        on connection: BuildConnection? = nil
    ) throws -> ReplicaBuild {
        try ReplicaBuild(
            directory: self, replica: replica, feedPosition: feedPosition, generatedAt: generatedAt,
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
    public func update<R>(
        _ queue: DatabaseQueue, _ replica: ReplicaID, feedPosition: Int64,
        _ body: (ReplicaTransaction) throws -> R
    ) throws -> R {
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
    /// across processes. With `timeout`, gives up with ``ReplicaBusy`` when the
    /// lock is not free within it (another process may hold it for ever).
    /// Blocks its thread while it waits: async code takes ``tryLock(_:waiting:)`` instead.
    public func withLock<R>(_ replica: ReplicaID, timeout: Duration? = nil, _ body: () throws -> R) throws -> R {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        let file = try openLock(replica)
        var lock = try file.take(waiting: deadline == nil)
        while lock == nil {
            guard let deadline, ContinuousClock.now < deadline else { throw ReplicaBusy(replica: replica) }
            usleep(20_000)
            lock = try file.take()
        }
        defer { lock?.release() }
        return try body()
    }

    /// Takes the replica's lock if it is free, at once; nil when someone holds
    /// it. With `waiting`, waits for it instead (blocking the thread).
    public func tryLock(_ replica: ReplicaID, waiting: Bool = false) throws -> ReplicaLock? {
        try openLock(replica).take(waiting: waiting)
    }

    /// The replica's lock file, opened once for a caller that tries the lock
    /// again and again (a push waiting for a rebuild to be swapped in).
    public func openLock(_ replica: ReplicaID) throws -> ReplicaLockFile {
        try ReplicaLockFile(replica: replica, path: url.appending(path: replica.fileName + ".lock").path)
    }

    /// Applies a worker's pushed changes to a replica, in order, in one
    /// transaction under the replica's lock, and says what became of each.
    /// Throws ``ReplicaBusy`` when the lock is not free within `lockTimeout`.
    @discardableResult
    public func push(
        _ changes: [WorkerChange], to replica: ReplicaID, by personID: Int64,
        receivedAt: Date = Date(), lockTimeout: Duration? = nil
    ) throws -> [WorkerChangeResult] {
        try withLock(replica, timeout: lockTimeout) {
            try pushLocked([WorkerPush(changes: changes, personID: personID)], to: replica, receivedAt: receivedAt)[0].get()
        }
    }

    /// ``push(_:to:by:receivedAt:lockTimeout:)`` for a caller that already holds the replica's lock.
    @discardableResult
    public func push(
        _ changes: [WorkerChange], holding lock: ReplicaLock, by personID: Int64,
        receivedAt: Date = Date()
    ) throws -> [WorkerChangeResult] {
        try push([WorkerPush(changes: changes, personID: personID)], holding: lock, receivedAt: receivedAt)[0].get()
    }

    /// Several workers' pushes to one replica in one transaction (one commit,
    /// one round of syncs), each in a savepoint of its own: a push whose write
    /// fails is undone alone and gets the error, the others are kept. Throws
    /// only when the transaction as a whole cannot be written. With
    /// `connections`, on a connection kept open between writes (``ReplicaConnections``).
    public func push(
        _ pushes: [WorkerPush], holding lock: ReplicaLock, receivedAt: Date = Date(),
        connections: ReplicaConnections? = nil
    ) throws -> [Result<[WorkerChangeResult], any Error>] {
        guard lock.isHeld else { throw ReplicaError("the lock of \(lock.replica.fileName) was released") }
        guard let connections else { return try pushLocked(pushes, to: lock.replica, receivedAt: receivedAt) }
        return try connections.withConnection(to: lock.replica) { queue in
            try write(pushes, to: queue, lock.replica, receivedAt: receivedAt)
        }
    }

    private func pushLocked(
        _ pushes: [WorkerPush], to replica: ReplicaID,
        receivedAt: Date
    ) throws -> [Result<[WorkerChangeResult], any Error>] {
        guard let queue = try open(replica) else { throw ReplicaError("\(replica.fileName) has not been generated yet") }
        defer { try? queue.close() }
        return try write(pushes, to: queue, replica, receivedAt: receivedAt)
    }

    private func write(
        _ pushes: [WorkerPush], to queue: DatabaseQueue, _ replica: ReplicaID,
        receivedAt: Date
    ) throws -> [Result<[WorkerChangeResult], any Error>] {
        try update(queue, replica, feedPosition: 0) { tx in
            pushes.map { push in
                Result {
                    var results: [WorkerChangeResult] = []
                    try tx.db.inSavepoint {
                        results = try push.changes.map { try tx.apply($0, by: push.personID, receivedAt: receivedAt) }
                        return .commit
                    }
                    return results
                }
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

/// One worker's changes, pushed in one request.
public struct WorkerPush: Sendable {
    public var changes: [WorkerChange]
    public var personID: Int64

    public init(changes: [WorkerChange], personID: Int64) {
        self.changes = changes
        self.personID = personID
    }
}

/// Which version of a replica file is at a path: its inode (a rebuild swaps
/// in a new file), size, modification time and SQLite's file change counter
/// (header bytes 24-27), which every committed write transaction of a
/// rollback-journal database (as replicas are) moves on. Two equal versions
/// mean nothing was written in between. The counter is what makes that hold:
/// the kernel stamps modification times with a clock of a few milliseconds'
/// grain, and two commits within one tick that keep the size would look the same.
public struct FileVersion: Hashable, Sendable {
    public var inode: UInt64
    public var size: Int64
    public var modifiedSeconds: Int
    public var modifiedNanoseconds: Int
    public var changeCounter: UInt32

    /// `nil` when there is no file at `path` (or too short to have a header).
    public init?(path: String) {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        var counter: UInt32 = 0
        guard fstat(fd, &info) == 0, pread(fd, &counter, 4, 24) == 4 else { return nil }
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modifiedSeconds = info.st_mtim.tv_sec
        modifiedNanoseconds = info.st_mtim.tv_nsec
        changeCounter = UInt32(bigEndian: counter)
    }
}

/// A replica's lock file (`NAME.lock`), open, to take the lock on. It is
/// opened for writing, so closing it is an inotify `IN_CLOSE_WRITE`: what tells
/// the listener that a push let go of the lock (``DirectoryWatcher/Event/unlocked``).
/// A caller that tries the lock every few milliseconds keeps one of these
/// rather than opening and closing the file each time, which woke the listener
/// for a pass over the replica at every try.
public final class ReplicaLockFile: Sendable {
    public let replica: ReplicaID
    let path: String
    /// The open file, until the lock taken on it carries it away.
    private let descriptor: Locked<Int32?>

    init(replica: ReplicaID, path: String) throws {
        let fd = Glibc.open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ReplicaError("cannot open \(path)") }
        self.replica = replica
        self.path = path
        descriptor = Locked(fd)
    }

    /// The lock, if it is free now (nil when someone holds it); with `waiting`,
    /// waits for it instead, blocking the thread. The lock holds the open file
    /// from then on, so a lock file gives one lock. For one caller at a time.
    public func take(waiting: Bool = false) throws -> ReplicaLock? {
        guard let fd = descriptor.value else { throw ReplicaError("\(path) was already locked through this lock file") }
        while flock(fd, waiting ? LOCK_EX : LOCK_EX | LOCK_NB) != 0 {
            switch errno {
            case EINTR:
                continue
            case EWOULDBLOCK:
                return nil
            default:
                throw ReplicaError("cannot lock \(path)")
            }
        }
        descriptor.mutate { $0 = nil }
        return ReplicaLock(replica: replica, descriptor: fd)
    }

    deinit {
        if let fd = descriptor.value { close(fd) }
    }
}

/// A replica's lock (flock on `NAME.lock`), held until ``release()``.
public final class ReplicaLock: @unchecked Sendable {
    public let replica: ReplicaID
    private let state: Locked<Int32?>

    init(replica: ReplicaID, descriptor: Int32) {
        self.replica = replica
        self.state = Locked(descriptor)
    }

    public var isHeld: Bool { state.value != nil }

    /// Lets the lock go; later calls do nothing.
    public func release() {
        state.mutate { descriptor in
            guard let fd = descriptor else { return }
            flock(fd, LOCK_UN)
            close(fd)
            descriptor = nil
        }
    }

    deinit { release() }
}

extension ReplicaDirectory {
    /// Why `replica`'s file cannot be read at all (overwritten, truncated, not a
    /// database), or nil when it looks whole, is missing, or is only busy: a
    /// look at its header (SQLite's magic string and a page size SQLite allows,
    /// bytes SQLite never changes once written) that every generator pass can
    /// afford for every file, confirmed by SQLite itself before a file is
    /// judged (one that SQLite reads, or that is only locked, is not damaged).
    /// Damage deeper in a file is `teamwork-service verify`'s to find.
    public func damage(of replica: ReplicaID) -> String? {
        let path = path(of: replica)
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        let header = [UInt8]((try? handle.read(upToCount: 18)) ?? Data())
        try? handle.close()
        let reason: String
        if header.count < 18 || Data(header[0..<16]) != Data("SQLite format 3\0".utf8) {
            reason = "not an SQLite database (its header is wrong)"
        } else {
            let raw = Int(header[16]) << 8 | Int(header[17])
            let pageSize = raw == 1 ? 65_536 : raw
            guard pageSize < 512 || pageSize & (pageSize - 1) != 0 else { return nil }
            reason = "its header names no valid page size"
        }
        do {
            _ = try ReplicaMeta.read(path: path)
            return nil
        } catch let error as DatabaseError
            where [.SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_CANTOPEN, .SQLITE_READONLY].contains(error.resultCode)
        {
            // Busy, locked, gone meanwhile, or a hot journal waiting for a writer to roll it back:
            // not ours to judge now; the next pass looks again.
            return nil
        } catch {
            // Not a database, corrupt, or empty (SQLite sees no tables in a file of no bytes).
            return reason
        }
    }

    /// Moves a damaged file aside into `damaged/`, stamped with the time, for
    /// an operator to look at; the generator then builds the replica anew.
    public func setAsideDamaged(_ replica: ReplicaID) throws {
        let folder = url.appending(path: "damaged")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let target = folder.appending(path: "\(replica.fileName).\(Int(Date().timeIntervalSince1970))")
        try? FileManager.default.removeItem(at: target)
        try FileManager.default.moveItem(atPath: path(of: replica), toPath: target.path)
        // Its journals go with it (an operator may yet recover something from them), never deleted.
        for suffix in ["-wal", "-shm", "-journal"] where FileManager.default.fileExists(atPath: path(of: replica) + suffix) {
            try? FileManager.default.removeItem(atPath: target.path + suffix)
            try? FileManager.default.moveItem(atPath: path(of: replica) + suffix, toPath: target.path + suffix)
        }
    }
}
