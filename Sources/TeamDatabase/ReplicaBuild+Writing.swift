import Foundation
import GRDB
import GRDBSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// Writing a finished file's bytes, over the spare file when it can be had.
extension ReplicaBuild {
    /// Writes the in-memory database `db` to `path`, which must not exist,
    /// over the `spare` file if it can be had.
    static func writeOut(_ db: Database, to path: String, reusing spare: String?) throws {
        var size: sqlite3_int64 = 0
        // NOCOPY: the in-memory database's own buffer, no copy of it.
        guard let bytes = sqlite3_serialize(db.sqliteConnection, "main", &size, UInt32(SQLITE_SERIALIZE_NOCOPY)) else {
            throw ReplicaError("cannot serialize the new \(path)")
        }
        try write(UnsafeRawBufferPointer(start: bytes, count: Int(size)), to: path, reusing: spare)
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
                if fstat(fd, &info) == 0, info.st_nlink == 1, Self.lease(fd) {
                    defer { _ = fcntl(fd, Self.setLease, F_UNLCK) }
                    fchmod(fd, 0o600)
                    try writeAll(bytes, to: fd, path: path)
                    guard ftruncate(fd, off_t(bytes.count)) == 0 else {
                        throw ReplicaError("cannot write \(path): \(String(cString: strerror(errno)))")
                    }
                    return
                }
            }
            unlink(path)
        }
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ReplicaError("cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        try writeAll(bytes, to: fd, path: path)
    }

    /// fcntl's F_SETLEASE (Linux), which Glibc's module does not export.
    private static let setLease: Int32 = 1024

    /// Takes a write lease on `fd`: granted only while no one else has the file
    /// open. Asked three times, 5 ms apart, because "someone" can be a moment's
    /// visitor: a process spawning a child holds a copy of every descriptor
    /// until the child's exec closes it (seen in the test process, whose other
    /// tests spawn processes all the time), and a backup tool may stat-open it.
    private static func lease(_ fd: Int32) -> Bool {
        for attempt in 0..<3 {
            if fcntl(fd, setLease, F_WRLCK) == 0 { return true }
            guard errno == EAGAIN || errno == EBUSY, attempt < 2 else { return false }
            usleep(5_000)
        }
        return false
    }

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
