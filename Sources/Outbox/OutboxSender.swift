import CentralStore
import Egress
import Logging
import ServiceLifecycle
import TeamworkModel

/// What every sender of the outbox has (webhooks, customers' messages, the phones' pushes), each with its own
/// defaults: sends in flight at once, each attempt's deadline, attempts in all and their full-jitter backoff
/// (`retryBase` doubling up to `retryMaximum`), where it may connect, how often it looks, and the window /health
/// judges its passes by. A sender's settings carry one (``SenderConfiguration``) and read as their own.
public struct SenderSettings: Sendable {
    public var concurrency: Int
    public var timeout: Duration
    public var attempts: Int
    public var retryBase: Duration
    public var retryMaximum: Duration
    /// Which addresses it may connect to.
    public var egress = EgressPolicy()
    /// How often the outbox is looked at while something is in flight or waits.
    public var poll: Duration = .milliseconds(500)
    /// The window /health judges the sender's passes by: idle, it looks four times within it (at most every 5 s).
    public var stallWindow: Duration = .seconds(30)

    public init(concurrency: Int, timeout: Duration, attempts: Int, retryBase: Duration, retryMaximum: Duration) {
        (self.concurrency, self.timeout, self.attempts) = (concurrency, timeout, attempts)
        (self.retryBase, self.retryMaximum) = (retryBase, retryMaximum)
    }
}

/// A sender's settings: ``SenderSettings`` (`settings.retryBase` reads and writes `settings.sending.retryBase`) and
/// what is its own.
@dynamicMemberLookup
public protocol SenderConfiguration: Sendable {
    var sending: SenderSettings { get set }
}

extension SenderConfiguration {
    public subscript<Value>(dynamicMember path: WritableKeyPath<SenderSettings, Value>) -> Value {
        get { sending[keyPath: path] }
        set { sending[keyPath: path] = newValue }
    }
}

/// How the outbox's senders (webhooks, customers' messages, pushes) go: up to `concurrency` sends in
/// flight, and a slot that frees is filled at once with what is due, so one slow receiver or relay
/// holds its own slot and nothing else. (In passes that each waited for their slowest send, one
/// conversation held for its 30 s deadline held back every message due behind it: seen in CI.)
///
/// Claims and records go over one connection of the sender's own, each statement within a query
/// deadline. A failure of the master (the deadline ends a statement on a dead connection) drops
/// the connection, is said in one log line and retried with backoff on a new one; what was in
/// flight is held and goes again after its hold. All of it ends at shutdown.
///
/// The same connection LISTENs on `teamwork_outbox`, which whatever queues something to send
/// notifies: with nothing in flight or waiting, a sender looks again when told, or after `idle`
/// at the latest (an idle service asked the master 8 times a second for its two senders, seen with
/// strace); while something is in flight or waits (a retry's hold, a channel not set), every `poll`.
/// Each look is a pass /health counts, so `idle` stays well inside the stall window (``idleWait(poll:stallWindow:)``).
struct OutboxSender<Item: Sendable, Outcome: Sendable>: Sendable {
    /// What a claim took: the items ready to send, and whether it took all it was allowed (more may be due).
    struct Claimed: Sendable {
        var ready: [Item]
        var full: Bool
    }

    var concurrency: Int
    /// Takes (and holds) at most `limit` items that are due; records at once those that are not to go.
    var claim: @Sendable (_ store: any OutboxStore, _ limit: Int) async throws -> Claimed
    /// Sends one; it does not touch the master.
    var send: @Sendable (Item) async -> Outcome
    /// Records what came of a send; true when it went.
    var record: @Sendable (_ store: any OutboxStore, Item, Outcome) async throws -> Bool
    /// How many wait (asked when nothing is due).
    var pending: @Sendable (any OutboxStore) async throws -> Int

    /// Runs until shutdown; `progress` hears of each outcome (went, failed) and, when nothing is due, of what waits.
    func run(
        url: DatabaseURL, poll: Duration, stallWindow: Duration, what: String, logger: Logger,
        progress: @escaping @Sendable (_ went: Int, _ failed: Int, _ pending: Int) -> Void
    ) async {
        await cancelWhenGracefulShutdown {
            await Retrying(Backoff(initial: .milliseconds(200), maximum: .seconds(5))).forever(failed: { ending, delay in
                if case .failed(let error) = ending {
                    logger.error("\(what) failed; retrying", metadata: ["error": "\(error)", "retry_in": "\(delay)"])
                }
            }) { made in
                let idle = Self.idleWait(poll: poll, stallWindow: stallWindow)
                try await CentralStore.withStore(url, queryDeadline: .seconds(10), logger: logger) { store in
                    let bell = Doorbell()
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            try await store.listen(
                                on: CentralStore.outboxChannel, ready: { bell.ring(listening: true) }, notified: { bell.ring() })
                            throw TeamworkError(.unavailable, "the master stopped telling of queued items")  // a new connection
                        }
                        group.addTask {
                            try await rolling(store, poll: poll, idle: idle, bell: bell, made: made.made, progress: progress)
                        }
                        defer { group.cancelAll() }
                        try await group.next()
                    }
                }
            }
        }
    }

    private enum Event: Sendable {
        case done(Item, Outcome)
        case tick
    }

    /// How long an idle sender waits for a notification before it looks anyway: a quarter of the
    /// stall window /health judges its passes by, at most 5 s, never less than `poll`.
    static func idleWait(poll: Duration, stallWindow: Duration) -> Duration {
        max(poll, min(.seconds(5), stallWindow / 4))
    }

    /// Keeps the slots full: claims for the free ones, again at once after each outcome or
    /// notification, and after `poll` when a claim found fewer than it could take (after `idle`
    /// when nothing is in flight or waiting and the LISTEN is registered).
    func rolling(
        _ store: any OutboxStore, poll: Duration, idle: Duration, bell: Doorbell, made: @escaping @Sendable () -> Void,
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
                    var wait = poll
                    if claimed.ready.isEmpty, inFlight == 0 {
                        let waiting = try await pending(store)
                        progress(0, 0, waiting)
                        if waiting == 0, bell.listening { wait = idle }
                    }
                    if inFlight < concurrency, !ticking {
                        ticking = true
                        group.addTask { [wait] in
                            await bell.wait(upTo: wait)
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
    func once(_ store: any OutboxStore) async throws -> (went: Int, failed: Int, pending: Int?) {
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

/// Wakes a waiting sender when the master says something was queued; a ring while nobody waits
/// is kept for the next wait, so nothing queued between a look and the wait after it is missed.
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var listening = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Locked(State())

    /// Whether the LISTEN is registered (a ring would be heard).
    var listening: Bool { state.value.listening }

    func ring(listening: Bool? = nil) {
        let waiter = state.mutate { state -> CheckedContinuation<Void, Never>? in
            if let listening { state.listening = listening }
            defer { state.waiter = nil }
            if state.waiter == nil { state.rung = true }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Returns when rung (at once when rung since the last wait), after `limit`, or when cancelled.
    func wait(upTo limit: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        let now = self.state.mutate { state -> Bool in
                            if state.rung || Task.isCancelled {
                                state.rung = false
                                return true
                            }
                            state.waiter = continuation
                            return false
                        }
                        if now { continuation.resume() }
                    }
                } onCancel: {
                    let waiter = self.state.mutate { state -> CheckedContinuation<Void, Never>? in
                        defer { state.waiter = nil }
                        return state.waiter
                    }
                    waiter?.resume()
                }
            }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
    }
}
