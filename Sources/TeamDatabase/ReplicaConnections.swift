import Foundation
import GRDB
import GRDBSQLite
import TeamworkModel

#if canImport(Glibc)
    import Glibc
#endif

/// Open connections to replica files, kept between writes so that each push
/// (or each catch-up of the generator) does not open the file, set the
/// connection up and prepare its statements again (that was most of a push's
/// CPU: SQLite's parser, not its writes).
///
/// A connection is lent to one caller at a time and comes back afterwards; a
/// caller that finds none idle for its replica opens another. A connection is
/// dropped instead of reused when the file at the replica's path is no longer
/// the one it has open (a rebuild swapped a new file in), when the work on it
/// failed, and when more than ``capacity`` are idle (the least recently used
/// goes). A rebuild swaps files under the replica's lock: a caller that holds
/// it (a push) cannot see the file change between the check and the write; the
/// generator, which writes without it, is the one that swaps files.
public final class ReplicaConnections: Sendable {
    private struct Idle: @unchecked Sendable {
        var queue: DatabaseQueue
        var file: FileIdentity
        var lastUsed: UInt64
    }

    private struct State: Sendable {
        var idle: [ReplicaID: [Idle]] = [:]
        var count = 0
        var clock: UInt64 = 0
        var opened = 0

        /// The idle connection used longest ago (one scan: at most ``capacity`` + 1 are kept).
        var leastRecentlyUsed: (replica: ReplicaID, index: Int)? {
            var oldest: (replica: ReplicaID, index: Int, lastUsed: UInt64)?
            for (replica, list) in idle {
                for (index, connection) in list.enumerated() where connection.lastUsed < oldest?.lastUsed ?? .max {
                    oldest = (replica, index, connection.lastUsed)
                }
            }
            return oldest.map { ($0.replica, $0.index) }
        }
    }

    public let directory: ReplicaDirectory
    /// The most connections kept idle, over all replicas.
    public let capacity: Int
    private let state = Locked(State())

    public init(directory: ReplicaDirectory, capacity: Int = 64) {
        self.directory = directory
        self.capacity = capacity
    }

    /// Idle connections kept now.
    public var idleCount: Int { state.value.count }
    /// Connections opened so far (for tests and metrics: reuse keeps it low).
    public var openedCount: Int { state.value.opened }

    /// The file of a replica is missing, cannot be opened (another schema) or is
    /// not a database (damaged): nothing was written.
    public struct CannotOpen: Error, CustomStringConvertible {
        public var replica: ReplicaID
        public var reason: any Error
        public var description: String { "cannot open \(replica.fileName): \(reason)" }
    }

    /// Runs `body` with a connection to `replica`'s current file; ``CannotOpen``
    /// when there is no usable file, else what `body` throws.
    public func withConnection<R>(to replica: ReplicaID, _ body: (DatabaseQueue) throws -> R) throws -> R {
        let path = directory.path(of: replica)
        guard let file = FileIdentity(path: path) else {
            throw CannotOpen(replica: replica, reason: ReplicaError("\(replica.fileName) has not been generated yet"))
        }
        var lent = take(replica)
        if let stale = lent, stale.file != file {
            try? stale.queue.close()
            lent = nil
        }
        let queue: DatabaseQueue
        if let lent {
            queue = lent.queue
        } else {
            let opened: DatabaseQueue?
            do {
                opened = try directory.open(replica)
            } catch {
                throw CannotOpen(replica: replica, reason: error)
            }
            guard let opened else {
                throw CannotOpen(replica: replica, reason: ReplicaError("\(replica.fileName) has not been generated yet"))
            }
            state.mutate { $0.opened += 1 }
            queue = opened
        }
        let result: R
        do {
            result = try body(queue)
        } catch {
            try? queue.close()
            // Damage written into the file after this connection opened it shows only now.
            if let failure = error as? DatabaseError, [.SQLITE_NOTADB, .SQLITE_CORRUPT].contains(failure.resultCode) {
                throw CannotOpen(replica: replica, reason: error)
            }
            throw error
        }
        // Kept for its prepared statements, not its pages: a page cache per kept connection
        // (up to 2 MB each, 64 kept) would hold a copy of files the kernel caches anyway.
        queue.inDatabase { db in _ = sqlite3_db_release_memory(db.sqliteConnection) }
        giveBack(Idle(queue: queue, file: file, lastUsed: 0), for: replica)
        return result
    }

    /// Closes every idle connection (at shutdown, or to let go of replaced files).
    public func closeAll() {
        let all = state.mutate { state -> [Idle] in
            let all = state.idle.values.flatMap { $0 }
            state.idle = [:]
            state.count = 0
            return all
        }
        for idle in all { try? idle.queue.close() }
    }

    private func take(_ replica: ReplicaID) -> Idle? {
        state.mutate { state in
            guard var list = state.idle[replica], let last = list.popLast() else { return nil }
            state.idle[replica] = list.isEmpty ? nil : list
            state.count -= 1
            return last
        }
    }

    private func giveBack(_ connection: Idle, for replica: ReplicaID) {
        let evicted = state.mutate { state -> [Idle] in
            state.clock += 1
            var connection = connection
            connection.lastUsed = state.clock
            state.idle[replica, default: []].append(connection)
            state.count += 1
            var evicted: [Idle] = []
            while state.count > capacity, let oldest = state.leastRecentlyUsed {
                evicted.append(state.idle[oldest.replica]!.remove(at: oldest.index))
                if state.idle[oldest.replica]!.isEmpty { state.idle[oldest.replica] = nil }
                state.count -= 1
            }
            return evicted
        }
        for idle in evicted { try? idle.queue.close() }
    }
}

/// Which file is at a path: its device and inode. A rebuild renames a new file
/// over the old one, which changes the inode at the path.
struct FileIdentity: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64

    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}
