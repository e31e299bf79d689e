import Foundation
import ServiceLifecycle
import TeamDatabase
import TeamworkModel

/// Wakes long-polling pulls (`GET …/changes?wait=N`) when their replica file
/// changes, whoever changed it: the generator in this process or another, a
/// push to this server or to another instance sharing the folder.
///
/// One loop for the whole server looks at the files that have waiters every
/// ``interval`` (one `stat` per file, however many devices wait on it) and
/// wakes those whose file differs from what they read; a push through this
/// server wakes its replica's waiters at once. A wait also ends at its
/// deadline, on cancellation, and at shutdown: open waits never hold SIGTERM up.
final class ReplicaWatch: Service, Sendable {
    private struct Waiter {
        var owner: Int64
        var path: String
        var stamp: FileVersion?
        var deadline: ContinuousClock.Instant
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var waiters: [Int: Waiter] = [:]
        var nextID = 0
        var closed = false
        /// Set by the first wait's shutdown handler (under this lock).
        var shuttingDown = false
    }

    /// How often the files with waiters are looked at: the most a change waits to be noticed.
    let interval: Duration
    private let state = Locked(State())

    /// Waits one owner (a person) may hold; a newer one ends their oldest.
    let maximumPerOwner: Int

    /// The replica folder, watched for writes (nil: the periodic look only).
    let directory: URL?

    /// Hears of each look (the loop's pass), for `/health` and `/metrics`.
    let looked: @Sendable () -> Void

    init(directory: URL? = nil, interval: Duration = .milliseconds(100), maximumPerOwner: Int = 12,
         looked: @escaping @Sendable () -> Void = {}) {
        self.looked = looked
        self.directory = directory
        self.interval = interval
        self.maximumPerOwner = maximumPerOwner
    }

    /// Open waits, for `/metrics` and tests.
    var waiting: Int { state.value.waiters.count }

    /// The live-mode lines of `/metrics` (Prometheus text).
    var metrics: String {
        """
        # HELP teamwork_sync_open_waits Live-mode pulls waiting for their replica to change
        # TYPE teamwork_sync_open_waits gauge
        teamwork_sync_open_waits \(waiting)

        """
    }

    /// Returns once the file at `path` differs from `stamp` (taken before the
    /// caller read it, so no change between reading and waiting is missed), once
    /// `timeout` has passed, when the task is cancelled or the server shuts down,
    /// or when `owner` opens more than ``maximumPerOwner`` waits and this is their oldest.
    func wait(path: String, from stamp: FileVersion?, timeout: Duration, owner: Int64) async {
        let id = state.mutate { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        let deadline = ContinuousClock.now + timeout
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let (admitted, displaced) = state.mutate { state -> (Bool, [Waiter]) in
                        // A handler installed after cancellation or shutdown began runs at once, before
                        // this: it found nothing to wake, so such a wait must not begin at all. Shutdown is
                        // read from this watch's own flag, which the handler sets under this lock: asking
                        // ServiceLifecycle here (`Task.isShuttingDownGracefully`) takes its lock inside
                        // ours, while it runs handlers, which take ours, inside its own: a deadlock, seen
                        // with 10,000 waits at SIGTERM.
                        guard !state.closed, !state.shuttingDown, !Task.isCancelled else { return (false, []) }
                        state.waiters[id] = Waiter(owner: owner, path: path, stamp: stamp, deadline: deadline, continuation: continuation)
                        let theirs = state.waiters.filter { $0.value.owner == owner }.keys.sorted()
                        return (true, theirs.dropLast(maximumPerOwner).compactMap { state.waiters.removeValue(forKey: $0) })
                    }
                    if !admitted { continuation.resume() }
                    for waiter in displaced { waiter.continuation.resume() }
                }
            } onCancel: {
                self.wake { key, _ in key == id }
            }
        } onGracefulShutdown: {
            self.shutDown()
        }
    }

    /// Wakes every waiter of one file now (a push through this server changed it).
    func changed(path: String) {
        wake { _, waiter in waiter.path == path }
    }

    /// Looks at the files with waiters until the server shuts down, then wakes
    /// every waiter. With a ``directory``, also looks at once at each file the
    /// folder's ``DirectoryWatcher`` reports written (Linux), so a generator's
    /// write reaches waiting devices without waiting for the next look.
    func run() async throws {
        let watcher = directory.flatMap { directory in
            DirectoryWatcher(path: directory.path, name: "teamwork-sync-watch", events: [.committed, .replaced]) { [weak self] replicas in
                self?.look(only: Set(replicas.map { directory.appending(path: $0.fileName).path }))
            }
        }
        defer { watcher?.stop() }
        // The sleep between looks ends at shutdown too, not at its end.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: self.interval)
                self.look()
                self.looked()
            }
        }
        close()
    }

    /// Shutdown began: every wait ends, and none begins from now on.
    private func shutDown() {
        let all = state.mutate { state -> [Waiter] in
            state.shuttingDown = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in all { waiter.continuation.resume() }
    }

    func close() {
        let all = state.mutate { state -> [Waiter] in
            state.closed = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in all { waiter.continuation.resume() }
    }

    /// One look: a `stat` per file with waiters, then the waiters whose file changed or whose time is up.
    func look() {
        let paths = Set(state.value.waiters.values.map(\.path))
        var stamps: [String: FileVersion?] = [:]
        for path in paths { stamps[path] = FileVersion(path: path) }
        let now = ContinuousClock.now
        wake { _, waiter in
            waiter.deadline <= now || (stamps[waiter.path].map { $0 != waiter.stamp } ?? false)
        }
    }

    /// A look at these files only: their waiters wake if the file changed.
    func look(only paths: Set<String>) {
        let watched = paths.intersection(state.value.waiters.values.map(\.path))
        guard !watched.isEmpty else { return }
        var stamps: [String: FileVersion?] = [:]
        for path in watched { stamps[path] = FileVersion(path: path) }
        wake { _, waiter in stamps[waiter.path].map { $0 != waiter.stamp } ?? false }
    }

    private func wake(where chosen: (Int, Waiter) -> Bool) {
        let woken = state.mutate { state -> [Waiter] in
            let ids = state.waiters.filter { chosen($0.key, $0.value) }.map(\.key)
            return ids.compactMap { state.waiters.removeValue(forKey: $0) }
        }
        for waiter in woken { waiter.continuation.resume() }
    }
}
