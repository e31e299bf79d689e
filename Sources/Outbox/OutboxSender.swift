import CentralStore
import Logging
import ServiceLifecycle
import TeamworkModel

/// How the outbox's senders (webhooks, customers' messages) go: up to `concurrency` sends in
/// flight, and a slot that frees is filled at once with what is due, so one slow receiver or relay
/// holds its own slot and nothing else. (In passes that each waited for their slowest send, one
/// conversation held for its 30 s deadline held back every message due behind it: seen in CI.)
///
/// Claims and records go over one connection of the sender's own, each statement within a query
/// deadline. A failure of the master (the deadline ends a statement on a dead connection) drops
/// the connection, is said in one log line and retried with backoff on a new one; what was in
/// flight is held and goes again after its hold. All of it ends at shutdown.
struct OutboxSender<Item: Sendable, Outcome: Sendable>: Sendable {
    /// What a claim took: the items ready to send, and whether it took all it was allowed (more may be due).
    struct Claimed: Sendable {
        var ready: [Item]
        var full: Bool
    }

    var concurrency: Int
    /// Takes (and holds) at most `limit` items that are due; records at once those that are not to go.
    var claim: @Sendable (_ store: CentralStore, _ limit: Int) async throws -> Claimed
    /// Sends one; it does not touch the master.
    var send: @Sendable (Item) async -> Outcome
    /// Records what came of a send; true when it went.
    var record: @Sendable (_ store: CentralStore, Item, Outcome) async throws -> Bool
    /// How many wait (asked when nothing is due).
    var pending: @Sendable (CentralStore) async throws -> Int

    /// Runs until shutdown; `progress` hears of each outcome (went, failed) and, when nothing is due, of what waits.
    func run(
        url: DatabaseURL, poll: Duration, what: String, logger: Logger,
        progress: @escaping @Sendable (_ went: Int, _ failed: Int, _ pending: Int) -> Void
    ) async {
        await cancelWhenGracefulShutdown {
            await Retrying(Backoff(initial: .milliseconds(200), maximum: .seconds(5))).forever(failed: { ending, delay in
                if case .failed(let error) = ending {
                    logger.error("\(what) failed; retrying", metadata: ["error": "\(error)", "retry_in": "\(delay)"])
                }
            }) { made in
                try await CentralStore.withStore(url, queryDeadline: .seconds(10), logger: logger) { store in
                    try await rolling(store, poll: poll, made: made.made, progress: progress)
                }
            }
        }
    }

    private enum Event: Sendable {
        case done(Item, Outcome)
        case tick
    }

    /// Keeps the slots full: claims for the free ones, again at once after each outcome, and after
    /// `poll` when a claim found fewer than it could take.
    func rolling(
        _ store: CentralStore, poll: Duration, made: @escaping @Sendable () -> Void,
        progress: @escaping @Sendable (_ went: Int, _ failed: Int, _ pending: Int) -> Void
    ) async throws {
        try await withThrowingTaskGroup(of: Event.self) { group in
            var (inFlight, ticking) = (0, false)
            while !Task.isCancelled {
                if inFlight < concurrency {
                    let claimed = try await claim(store, concurrency - inFlight)
                    for item in claimed.ready {
                        inFlight += 1
                        group.addTask { .done(item, await send(item)) }
                    }
                    made()
                    if claimed.full, inFlight < concurrency { continue }
                    if claimed.ready.isEmpty, inFlight == 0 { progress(0, 0, try await pending(store)) }
                    if inFlight < concurrency, !ticking {
                        ticking = true
                        group.addTask {
                            try? await Task.sleep(for: poll)
                            return .tick
                        }
                    }
                }
                guard let event = try await group.next() else { continue }
                switch event {
                case .tick:
                    ticking = false
                case .done(let item, let outcome):
                    inFlight -= 1
                    let went = try await record(store, item, outcome)
                    progress(went ? 1 : 0, went ? 0 : 1, -1)
                }
            }
            group.cancelAll()
        }
    }

    /// One claim, everything it took sent at once and recorded: (went, failed), or what waits when nothing was due.
    func once(_ store: CentralStore) async throws -> (went: Int, failed: Int, pending: Int?) {
        let claimed = try await claim(store, concurrency)
        guard !claimed.ready.isEmpty else { return (0, 0, try await pending(store)) }
        return try await withThrowingTaskGroup(of: (Item, Outcome).self) { group in
            for item in claimed.ready { group.addTask { (item, await send(item)) } }
            var (went, failed) = (0, 0)
            for try await (item, outcome) in group {
                if try await record(store, item, outcome) { went += 1 } else { failed += 1 }
            }
            return (went, failed, nil)
        }
    }
}
