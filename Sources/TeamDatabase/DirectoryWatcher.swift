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

    /// What happened to a replica's files.
    public enum Event: Sendable, Hashable {
        /// A write transaction committed: its rollback journal was deleted.
        case committed
        /// A rebuild renamed a new file into place.
        case replaced
        /// Someone let go of the replica's lock (closed its lock file after a push).
        case unlocked
    }

    /// Starts watching `path`; `changed` gets the replicas that had one of
    /// `events`, from a background thread named `name`.
    public init?(path: String, name: String, events: Set<Event>, changed: @escaping @Sendable (Set<ReplicaID>) -> Void) {
        #if os(Linux)
            descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
            guard descriptor >= 0 else { return nil }
            guard inotify_add_watch(descriptor, path, UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE)) >= 0 else {
                close(descriptor)
                return nil
            }
            let thread = Thread { [descriptor, stopped] in
                Self.loop(descriptor, events: events, stopped: stopped, changed: changed)
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
        private static func loop(
            _ descriptor: Int32, events: Set<Event>, stopped: Locked<Bool>,
            changed: @Sendable (Set<ReplicaID>) -> Void
        ) {
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
                        // struct inotify_event: wd, mask, cookie, len, then the name.
                        let mask = buffer.load(fromByteOffset: offset + 4, as: UInt32.self)
                        let length = Int(buffer.load(fromByteOffset: offset + 12, as: UInt32.self))
                        if length > 0 {
                            let name = String(cString: buffer.advanced(by: offset + 16).assumingMemoryBound(to: CChar.self))
                            if let (replica, event) = event(mask: mask, file: name), events.contains(event) { replicas.insert(replica) }
                        }
                        offset += 16 + length
                    }
                }
                if !replicas.isEmpty { changed(replicas) }
            }
        }
    #endif

    /// The replica and event an inotify event on `file` stands for: `team-12.sqlite-journal`
    /// deleted, `team-12.sqlite` moved into place, `team-12.sqlite.lock` closed after writing.
    static func event(mask: UInt32, file: String) -> (ReplicaID, Event)? {
        #if os(Linux)
            let kinds: [(suffix: String, mask: Int32, event: Event)] = [
                ("-journal", IN_DELETE, .committed), ("", IN_MOVED_TO, .replaced), (".lock", IN_CLOSE_WRITE, .unlocked),
            ]
            for kind in kinds where mask & UInt32(kind.mask) != 0 && file.hasSuffix(kind.suffix) {
                if let replica = ReplicaID(fileName: String(file.dropLast(kind.suffix.count))) { return (replica, kind.event) }
            }
        #endif
        return nil
    }
}
