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
/// deadline, on cancellation, and at shutdown (``shutDown()``): open waits never hold SIGTERM up;
/// a change of someone's access wakes their waits to be checked again (``accessChanged(of:)``).
final class ReplicaWatch: Service, Sendable {
    fileprivate struct Waiter {
        var owner: Int64
        /// Its connection's place in the order connections were accepted: at shutdown, waits end in that order.
        var rank: Int
        var path: String
        var stamp: FileVersion?
        var continuation: CheckedContinuation<WaitEnd, Never>
    }

    /// Why a wait ended.
    enum WaitEnd: Sendable, Equatable {
        /// The file is no longer as the wait read it; `seen` is its state as the look that noticed
        /// found it (taken before the wake, so a read after it misses nothing), which the thousands
        /// woken by one write take as theirs instead of each looking at the file again.
        case changed(seen: FileVersion?)
        /// Its time was up.
        case timedOut
        /// Shutdown, cancellation, or the owner's newer waits displaced it: nothing more to wait for.
        case ended
        /// Who may read what changed (a token revoked, a membership changed): the caller is checked
        /// again, and waits on if it still may read the file.
        case accessChanged

        /// The file's state the look found, for a wait that ended because the file changed.
        var seen: FileVersion? {
            if case .changed(let seen) = self { seen } else { nil }
        }
    }

    /// Open waits, indexed so that no step looks at every other wait: a fleet holds tens of
    /// thousands, they all begin again together after a wake or a restart, and the watch looks
    /// ten times a second.
    fileprivate struct State {
        var waiters: [Int: Waiter] = [:]
        /// The waiters of each file, by the state of the file they read: a look wakes the
        /// groups whose state the file has left.
        var byPath: [String: [FileVersion?: Set<Int>]] = [:]
        /// Each owner's waits, oldest first.
        var byOwner: [Int64: [Int]] = [:]
        /// Waits by when they end (a timing wheel): slot `n` ends at `origin + n × slotWidth`, at
        /// the first look after that. Ended waits are skipped when their slot comes.
        var bySlot: [Int64: [Int]] = [:]
        /// The first slot not yet swept.
        var nextSlot: Int64 = 0
        var nextID = 0
        var closed = false
        /// Set when the server's shutdown begins (``ReplicaWatch/shutDown()``).
        var shuttingDown = false
    }

    /// How often the files with waiters are looked at: the most a change waits to be noticed.
    let interval: Duration
    private let state = Locked(State())
    /// Slot 0 of the deadline wheel.
    private let origin = ContinuousClock.now
    /// How much time one slot of the wheel holds.
    private static let slotWidth = Duration.milliseconds(10)

    /// Waits one owner (a person) may hold; a newer one ends their oldest.
    let maximumPerOwner: Int

    /// The replica folder, watched for writes (nil: the periodic look only).
    let directory: URL?

    /// Hears of each look (the loop's pass), for `/health` and `/metrics`.
    let looked: @Sendable () -> Void

    init(
        directory: URL? = nil, interval: Duration = .milliseconds(100), maximumPerOwner: Int = 12,
        looked: @escaping @Sendable () -> Void = {}
    ) {
        self.looked = looked
        self.directory = directory
        self.interval = interval
        self.maximumPerOwner = maximumPerOwner
    }

    /// Open waits, for `/metrics` and tests.
    var waiting: Int { state.mutate { $0.waiters.count } }

    /// Whether the server's shutdown began (no wait begins any more).
    var shuttingDown: Bool { state.mutate { $0.shuttingDown || $0.closed } }

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
    @discardableResult
    func wait(path: String, from stamp: FileVersion?, timeout: Duration, owner: Int64, rank: Int = 0) async -> WaitEnd {
        let id = state.mutate { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        let deadline = ContinuousClock.now + timeout
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<WaitEnd, Never>) in
                let (admitted, displaced) = state.mutate { state -> (Bool, [Waiter]) in
                    // Cancelled before the handler could find this wait, or shutdown begun (this
                    // request was already being handled): such a wait must not begin at all.
                    guard !state.closed, !state.shuttingDown, !Task.isCancelled else { return (false, []) }
                    state.add(
                        id, slot: slot(of: deadline), Waiter(owner: owner, rank: rank, path: path, stamp: stamp, continuation: continuation)
                    )
                    let theirs = state.byOwner[owner] ?? []
                    return (true, theirs.dropLast(maximumPerOwner).compactMap { state.remove($0) })
                }
                if !admitted { continuation.resume(returning: .ended) }
                for waiter in displaced { waiter.continuation.resume(returning: .ended) }
            }
        } onCancel: {
            self.state.mutate { $0.remove(id) }?.continuation.resume(returning: .ended)
        }
    }

    /// Wakes every waiter of one file now (a push through this server changed it).
    func changed(path: String) {
        let seen = FileVersion(path: path)
        let woken = state.mutate { state in
            (state.byPath[path]?.values.flatMap { $0 } ?? []).compactMap { state.remove($0) }
        }
        for waiter in woken { waiter.continuation.resume(returning: .changed(seen: seen)) }
    }

    /// What these people may read changed (the access cache has loaded the master's answers after a
    /// notification): their waits end with ``WaitEnd/accessChanged``, so each caller is checked
    /// again at once, from the cache's fresh memory, instead of at the wait's end. A removed member
    /// or a revoked token is answered within milliseconds; everyone else's waits are not touched.
    func accessChanged(of people: Set<Int64>) {
        let woken = state.mutate { state -> [Waiter] in
            guard !state.closed, !state.shuttingDown else { return [] }
            return people.flatMap { state.byOwner[$0] ?? [] }.compactMap { state.remove($0) }
        }
        for waiter in woken { waiter.continuation.resume(returning: .accessChanged) }
    }

    /// Looks at the files with waiters until the server shuts down, then wakes
    /// every waiter. With a ``directory``, also looks at once at each file the
    /// folder's ``DirectoryWatcher`` reports written (Linux), so a generator's
    /// write reaches waiting devices without waiting for the next look.
    func run() async throws {
        let watcher = directory.flatMap { directory in
            let paths = ReplicaPaths(directory)
            return DirectoryWatcher(path: directory.path, name: "teamwork-sync-watch", events: [.committed, .replaced]) {
                [weak self] replicas in
                self?.look(only: Set(replicas.map(paths.path(of:))))
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

    /// Shutdown began: every wait ends, and none begins from now on. Called by the server's
    /// connections as they are told to quiesce (``Connections``): the server's graceful shutdown
    /// waits for every request in hand, so the waits must end as it begins, not once it is over
    /// (when the watch's own turn to stop comes). One notice for the whole server, not one
    /// ServiceLifecycle handler per wait: ServiceLifecycle keeps its handlers in an array that
    /// each wait's end searched and shifted, 5% of the service's CPU in a 10,000-device fan-out.
    func shutDown() {
        endAll { $0.shuttingDown = true }
    }

    func close() {
        endAll { $0.closed = true }
    }

    /// Ends every wait, after `mark` (under the same lock) has made sure no new one begins: the
    /// oldest connection's first (``Connections`` says why).
    private func endAll(_ mark: (inout State) -> Void) {
        let all = state.mutate { state -> [Waiter] in
            mark(&state)
            return state.removeAll()
        }
        for waiter in all.sorted(by: { $0.rank < $1.rank }) { waiter.continuation.resume(returning: .ended) }
    }

    /// One look: a `stat` per file with waiters, then the waiters whose file changed or whose time is up.
    /// The files are looked at outside the lock: waits that begin meanwhile (their id past
    /// `horizon`) may have read the file after this look did, and are left to the next look.
    func look() {
        let (paths, horizon) = state.mutate { (Array($0.byPath.keys), $0.nextID) }
        var stamps: [String: FileVersion?] = [:]
        for path in paths { stamps[path] = FileVersion(path: path) }
        let now = ContinuousClock.now
        let last = Int64(((now - origin) / Self.slotWidth).rounded(.down))
        let (changed, timedOut) = state.mutate { state -> ([Waiter], [Waiter]) in
            let changed = state.changed(stamps, upTo: horizon)
            var timedOut: [Waiter] = []
            // The slots since the last look; after a long pause, the slots that hold waits.
            let due =
                last - state.nextSlot < Int64(state.bySlot.count)
                ? Array(state.nextSlot...max(state.nextSlot, last)).filter { $0 <= last }
                : state.bySlot.keys.filter { $0 <= last }
            for slot in due {
                for id in state.bySlot.removeValue(forKey: slot) ?? [] {
                    if let waiter = state.remove(id) { timedOut.append(waiter) }
                }
            }
            state.nextSlot = max(state.nextSlot, last + 1)
            return (changed, timedOut)
        }
        for waiter in changed { waiter.continuation.resume(returning: .changed(seen: stamps[waiter.path] ?? nil)) }
        for waiter in timedOut { waiter.continuation.resume(returning: .timedOut) }
    }

    /// A look at these files only: their waiters wake if the file changed.
    func look(only paths: Set<String>) {
        let (watched, horizon) = state.mutate { state in (paths.filter { state.byPath[$0] != nil }, state.nextID) }
        guard !watched.isEmpty else { return }
        var stamps: [String: FileVersion?] = [:]
        for path in watched { stamps[path] = FileVersion(path: path) }
        let woken = state.mutate { $0.changed(stamps, upTo: horizon) }
        for waiter in woken { waiter.continuation.resume(returning: .changed(seen: stamps[waiter.path] ?? nil)) }
    }

    /// The slot of the deadline wheel a wait ending at `deadline` is ended in: the first that ends at or after it.
    private func slot(of deadline: ContinuousClock.Instant) -> Int64 {
        Int64(((deadline - origin) / Self.slotWidth).rounded(.up))
    }
}

private extension ReplicaWatch.State {
    mutating func add(_ id: Int, slot: Int64, _ waiter: ReplicaWatch.Waiter) {
        waiters[id] = waiter
        byPath[waiter.path, default: [:]][waiter.stamp, default: []].insert(id)
        byOwner[waiter.owner, default: []].append(id)
        bySlot[max(slot, nextSlot), default: []].append(id)
    }

    /// Takes one waiter out of the waiters and their indexes (the wheel skips it when its slot comes).
    mutating func remove(_ id: Int) -> ReplicaWatch.Waiter? {
        guard let waiter = waiters.removeValue(forKey: id) else { return nil }
        byPath[waiter.path]?[waiter.stamp]?.remove(id)
        if byPath[waiter.path]?[waiter.stamp]?.isEmpty == true { byPath[waiter.path]?[waiter.stamp] = nil }
        if byPath[waiter.path]?.isEmpty == true { byPath[waiter.path] = nil }
        byOwner[waiter.owner]?.removeAll { $0 == id }
        if byOwner[waiter.owner]?.isEmpty == true { byOwner[waiter.owner] = nil }
        return waiter
    }

    /// Takes out the waiters whose file is no longer in the state they read, of those that
    /// began before the files were looked at (ids up to `horizon`): a wait that began later may
    /// have read the file after the look, and the look's older stamp would end it for nothing.
    mutating func changed(_ stamps: [String: FileVersion?], upTo horizon: Int) -> [ReplicaWatch.Waiter] {
        var woken: [ReplicaWatch.Waiter] = []
        for (path, now) in stamps {
            for (stamp, ids) in byPath[path] ?? [:] where stamp != now {
                woken += ids.filter { $0 <= horizon }.compactMap { remove($0) }
            }
        }
        return woken
    }

    mutating func removeAll() -> [ReplicaWatch.Waiter] {
        defer { (waiters, byPath, byOwner, bySlot) = ([:], [:], [:], [:]) }
        return Array(waiters.values)
    }
}

/// Where each replica's file is, as the one string the watch, pulls and pushes all name it by:
/// a write reported under one spelling of a path would not wake the waits held under another.
struct ReplicaPaths: Sendable {
    /// The replicas folder's path with its final slash (built once: `URL.appending` per request
    /// cost more than the rest of a no-op pull).
    let folder: String

    init(_ directory: URL) {
        let path = directory.path
        folder = path.hasSuffix("/") ? path : path + "/"
    }

    func path(of replica: ReplicaID) -> String { folder + replica.fileName }
}
