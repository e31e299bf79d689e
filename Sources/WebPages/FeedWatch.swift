import CentralStore
import Foundation
import Logging
import ServerSupport
import ServiceLifecycle
import TeamworkModel

/// Wakes the live boards' waiting requests when the master's change feed moves:
/// `LISTEN teamwork_feed` on a connection of its own. While that LISTEN is lost the
/// waiters look every second instead, so a board is never more than about a
/// second behind even then. At shutdown every waiter is woken and none starts again.
final class FeedWatch: Service, Sendable {
    private struct State {
        var waiters: [Int: (continuation: CheckedContinuation<Void, Never>, sleeper: Task<Void, Never>?)] = [:]
        var next = 0
        /// Notifications so far: a waiter that read the feed at one generation and finds another
        /// when it would start waiting does not wait (the notification came in between).
        var generation = 0
        var listening = false
        var closed = false
    }

    let url: DatabaseURL
    let logger: Logger
    private let state = Locked(State())
    private let checked = Locked(false)

    init(url: DatabaseURL, logger: Logger) {
        self.url = url
        self.logger = logger
    }

    /// Whether notifications arrive (else a waiter should look again soon).
    var isListening: Bool { state.value.listening }
    var isClosed: Bool { state.value.closed }
    var waiting: Int { state.value.waiters.count }

    /// The notifications so far; read it before reading the feed, and pass it to ``pause(for:after:)``.
    var generation: Int { state.value.generation }

    /// Returns when the feed may have moved since `generation` (at once if it already has), after
    /// `timeout`, on cancellation or when the server shuts down.
    func pause(for timeout: Duration, after generation: Int) async {
        let id = state.mutate { state -> Int in
            state.next += 1
            return state.next
        }
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let added = state.mutate { state -> Bool in
                        // Not `Task.isShuttingDownGracefully` under this lock (ServiceLifecycle's lock inside
                        // ours deadlocks with its handlers, see ReplicaWatch): the handler sets `closed` here.
                        guard !state.closed, state.generation == generation, !Task.isCancelled else {
                            return false
                        }
                        state.waiters[id] = (continuation, nil)
                        return true
                    }
                    guard added else { return continuation.resume() }
                    let sleeper = Task { [weak self] in
                        try? await Task.sleep(for: timeout)
                        if !Task.isCancelled { self?.wake(id) }
                    }
                    let stillWaiting = state.mutate { state -> Bool in
                        guard state.waiters[id] != nil else { return false }
                        state.waiters[id]?.sleeper = sleeper
                        return true
                    }
                    if !stillWaiting { sleeper.cancel() }
                }
            } onCancel: {
                wake(id)
            }
        } onGracefulShutdown: {
            self.wakeAll(closed: true)
        }
    }

    private func wake(_ id: Int) {
        guard let waiter = state.mutate({ $0.waiters.removeValue(forKey: id) }) else { return }
        waiter.sleeper?.cancel()
        waiter.continuation.resume()
    }

    private func wakeAll(listening: Bool? = nil, closed: Bool = false, notified: Bool = false) {
        let woken = state.mutate { state -> [(continuation: CheckedContinuation<Void, Never>, sleeper: Task<Void, Never>?)] in
            if let listening { state.listening = listening }
            if closed { state.closed = true }
            if notified || listening != nil { state.generation += 1 }
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in woken {
            waiter.sleeper?.cancel()
            waiter.continuation.resume()
        }
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await CentralStore.listen(on: CentralStore.feedChannel, at: self.url, logger: self.logger) { events in
                for await event in events {
                    switch event {
                    case .listening(let store):
                        if !self.checked.value, let canAct = await self.check(store) {
                            self.checked.mutate { $0 = true }
                            if !canAct {
                                self.logger.error(
                                    "board: its database role is not a manager's (teamwork_manager): nobody can sign in or change tasks on the board; give it --board-database-url with such a role (docs/operations.md)"
                                )
                            }
                        }
                        // Changes made while not listening are found by the waiters' next look.
                        self.wakeAll(listening: true)
                    case .notified:
                        self.wakeAll(notified: true)
                    case .lost(let ending, let delay):
                        self.wakeAll(listening: false)
                        self.logger.warning(
                            "board: change notifications lost; live boards look every second until they are back",
                            metadata: ["error": "\(ending)", "delay": "\(delay)"])
                    }
                }
            }
        }
        wakeAll(listening: false, closed: true)
    }

    /// Whether the board's role may act (nil when the master did not say within 10 s: asked again at the next listening).
    private func check(_ store: CentralStore) async -> Bool? {
        do {
            return try await withDeadline(.seconds(10), timeout: { StoreUnavailable() }) { try await store.canActAsBoard() }
        } catch {
            logger.warning("board: cannot tell whether its database role may act", metadata: ["error": "\(error)"])
            return nil
        }
    }
}
