import Foundation
import TeamworkModel
import TeamDatabase
#if canImport(Glibc)
import Glibc
#endif

/// Tells which replicas in a folder were just written, so the listener wakes at
/// once when the sync endpoint (in this process or another) stores worker
/// changes. Linux inotify: a write transaction ends with its journal deleted,
/// and a push ends with its lock file closed. Elsewhere it reports nothing and
/// the periodic sweep does the work.
final class DirectoryWatcher: @unchecked Sendable {
    private let descriptor: Int32
    private let stopped = Locked(false)
    private var thread: Thread?

    /// Starts watching `path`; `changed` gets replica names (`team-12`) from a background thread.
    init?(path: String, changed: @escaping @Sendable (Set<String>) -> Void) {
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
        thread.name = "teamwork-listener-watch"
        thread.start()
        self.thread = thread
        #else
        return nil
        #endif
    }

    /// Stops the watching thread (within a quarter of a second) and closes the descriptor.
    func stop() {
        stopped.mutate { $0 = true }
    }

    #if os(Linux)
    private static func loop(_ descriptor: Int32, stopped: Locked<Bool>, changed: @Sendable (Set<String>) -> Void) {
        defer { close(descriptor) }
        let size = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        defer { buffer.deallocate() }
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while !stopped.value {
            guard poll(&poller, 1, 250) > 0 else { continue }
            var names = Set<String>()
            while true {
                let count = read(descriptor, buffer, size)
                guard count > 0 else { break }
                var offset = 0
                while offset + 16 <= count {
                    let length = Int(buffer.load(fromByteOffset: offset + 12, as: UInt32.self))
                    if length > 0 {
                        let name = String(cString: buffer.advanced(by: offset + 16).assumingMemoryBound(to: CChar.self))
                        if let replica = replicaName(of: name) { names.insert(replica) }
                    }
                    offset += 16 + length
                }
            }
            if !names.isEmpty { changed(names) }
        }
    }
    #endif

    /// `team-12.sqlite`, `team-12.sqlite-journal`, `team-12.sqlite.lock` → `team-12`; the common replica and other files → nil.
    static func replicaName(of fileName: String) -> String? {
        var stem = fileName
        for suffix in ["-journal", "-wal", ".lock"] where stem.hasSuffix(suffix) {
            stem.removeLast(suffix.count)
        }
        guard let replica = ReplicaID(fileName: stem), replica != .common else { return nil }
        return replica.name
    }
}
