import Foundation
import TeamworkModel
#if canImport(Glibc)
import Glibc
#endif

/// Tells which replicas in a folder were just written, whoever wrote them (this
/// process or another): the listener wakes at once when the sync endpoint
/// stores worker changes, and live-mode pulls when the generator writes their
/// replica. Linux inotify: a write transaction ends with its journal deleted, a
/// rebuild renames its new file into place, and a push ends with its lock file
/// closed. Elsewhere it reports nothing and callers rely on their periodic look.
public final class DirectoryWatcher: @unchecked Sendable {
    private let descriptor: Int32
    private let stopped = Locked(false)
    private var thread: Thread?

    /// Starts watching `path`; `changed` gets the replicas written, from a background thread named `name`.
    public init?(path: String, name: String, changed: @escaping @Sendable (Set<ReplicaID>) -> Void) {
        #if os(Linux)
        descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard descriptor >= 0 else { return nil }
        guard inotify_add_watch(descriptor, path, UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE)) >= 0 else {
            close(descriptor)
            return nil
        }
        let thread = Thread { [descriptor, stopped] in
            Self.loop(descriptor, stopped: stopped, changed: changed)
        }
        thread.name = name
        thread.start()
        self.thread = thread
        #else
        return nil
        #endif
    }

    /// Stops the watching thread (within a quarter of a second) and closes the descriptor.
    public func stop() {
        stopped.mutate { $0 = true }
    }

    #if os(Linux)
    private static func loop(_ descriptor: Int32, stopped: Locked<Bool>, changed: @Sendable (Set<ReplicaID>) -> Void) {
        defer { close(descriptor) }
        let size = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        defer { buffer.deallocate() }
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while !stopped.value {
            guard poll(&poller, 1, 250) > 0 else { continue }
            var replicas = Set<ReplicaID>()
            while true {
                let count = read(descriptor, buffer, size)
                guard count > 0 else { break }
                var offset = 0
                while offset + 16 <= count {
                    let length = Int(buffer.load(fromByteOffset: offset + 12, as: UInt32.self))
                    if length > 0 {
                        let name = String(cString: buffer.advanced(by: offset + 16).assumingMemoryBound(to: CChar.self))
                        if let replica = replica(ofFile: name) { replicas.insert(replica) }
                    }
                    offset += 16 + length
                }
            }
            if !replicas.isEmpty { changed(replicas) }
        }
    }
    #endif

    /// `team-12.sqlite`, `team-12.sqlite-journal`, `team-12.sqlite.lock` → team 12; other files → nil.
    static func replica(ofFile fileName: String) -> ReplicaID? {
        var stem = fileName
        for suffix in ["-journal", "-wal", ".lock"] where stem.hasSuffix(suffix) {
            stem.removeLast(suffix.count)
        }
        return ReplicaID(fileName: stem)
    }
}
