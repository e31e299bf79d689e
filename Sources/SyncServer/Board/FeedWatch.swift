import CentralStore
import Foundation
import Logging
import ServiceLifecycle
import TeamworkModel

/// Wakes the live boards' waiting requests when the master's change feed moves:
/// `LISTEN teamwork_feed` on a connection of its own. While that LISTEN is lost the
/// waiters look every second instead, so a board is never more than about a
/// second behind even then. At shutdown every waiter is woken and none starts again.
final class FeedWatch: Service, Sendable {
    private struct State {
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var next = 0
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

    /// Returns when the feed may have moved, after `timeout`, on cancellation or at shutdown.
    func pause(for timeout: Duration) async {
        let id = state.mutate { state -> Int in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let added = state.mutate { state -> Bool in
                    guard !state.closed, !Task.isCancelled else { return false }
                    state.waiters[id] = continuation
                    return true
                }
                guard added else { return continuation.resume() }
                Task { [weak self] in
                    try? await Task.sleep(for: timeout)
                    self?.wake(id)
                }
            }
        } onCancel: {
            wake(id)
        }
    }

    private func wake(_ id: Int) {
        state.mutate { $0.waiters.removeValue(forKey: id) }?.resume()
    }

    private func wakeAll(listening: Bool? = nil, closed: Bool = false) {
        let woken = state.mutate { state -> [CheckedContinuation<Void, Never>] in
            if let listening { state.listening = listening }
            if closed { state.closed = true }
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for continuation in woken { continuation.resume() }
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await Retrying(Backoff(initial: .milliseconds(200), maximum: .seconds(5))).forever(failed: { ending, delay in
                self.wakeAll(listening: false)
                self.logger.warning("board: change notifications lost; live boards look every second until they are back",
                                    metadata: ["error": "\(ending)", "delay": "\(delay)"])
            }) { progress in
                try await CentralStore.withStore(self.url, logger: self.logger) { store in
                    if !self.checked.value {
                        self.checked.mutate { $0 = true }
                        if try await !store.canActAsBoard() {
                            self.logger.error("board: its database role is not a manager's (teamwork_manager): nobody can sign in or change tasks on the board; give it --board-database-url with such a role (docs/operations.md)")
                        }
                    }
                    try await store.listenToFeed(ready: {
                        progress.made()
                        // Changes made while not listening are found by the waiters' next look.
                        self.wakeAll(listening: true)
                    }, notified: { self.wakeAll() })
                }
            }
        }
        wakeAll(listening: false, closed: true)
    }
}
