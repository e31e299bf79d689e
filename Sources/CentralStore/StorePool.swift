import Logging
import PostgresNIO
import ServiceLifecycle
import TeamworkModel

/// The master connections of one surface of a long-running process (docs/security.md, "Master
/// connections"): postgres-nio's `PostgresClient`, at most ``maximum`` open, each opened when it is
/// needed and closed after a minute unused. What a surface may hold is this pool's limit, declared
/// where the process makes its pools, not a count kept by hand.
///
/// A lease waits at most ``leaseDeadline`` and then fails as the master being unavailable (503 on
/// the web): a pool whose connections cannot be made would otherwise keep its callers waiting for
/// ever while it retries (vapor/postgres-nio#565). While the master cannot be reached (the pool's
/// last attempt to connect failed, as its log says, "Connection creation failed", which the pool
/// watches, and no connection has answered since), a call fails at once with that reason, as a
/// connection of its own would have: a device the master vouched for is then answered from memory
/// without waiting. A refusal for too many connections (the role's or the server's limit) is no
/// outage: the master answered, and a call waits for a connection that works. The pool keeps
/// trying by itself (postgres-nio's pause: 0.1 s, a quarter longer each time, at most a minute),
/// and one probe at a time (`SELECT 1`) sees when it works again: the first answer ends the
/// failing. The body runs as ``CentralStore/withStore(_:actorID:queryDeadline:logger:_:)``'s
/// does: with the acting person, each query within `queryDeadline`, and a cancelled body's connection
/// closed after ``CentralStore/cancellationGrace`` (the pool replaces a connection closed under it).
///
/// A connection goes back to the pool as it is: nothing may set session state on one (a LISTEN, a
/// session advisory lock, `SET` without `LOCAL`); those take a connection of their own.
/// Run the pool as a service beside what uses it; when it ends, its connections are closed.
public final class StorePool: Service, Sendable {
    /// The surface, for messages.
    public let name: String
    /// The most connections open at once.
    public let maximum: Int
    /// How long a caller waits for a connection.
    public let leaseDeadline: Duration
    /// How often a resting connection is checked (`SELECT 1`). While the pool's connects fail,
    /// postgres-nio 1.33 queues every new call even with a connection resting (its
    /// `PoolStateMachine.leaseConnection`, state `connectionCreationFailing`): a resting connection
    /// is handed on only when it comes back from a check or a body. Its own 30 s would outlast a
    /// lease's deadline; 2 s costs a `SELECT 1` per resting connection every 2 s.
    static let restingCheck = Duration.seconds(2)
    /// One client per host of the URL (several after libpq's syntax), each opening connections only
    /// while it is the one in use: ``current``, the host found taking writes.
    let clients: [PostgresClient]
    let url: DatabaseURL
    /// Which of ``clients`` calls use: the first host until the pool has looked, then the one found
    /// answering and taking writes; looked for again when the master cannot be reached or a write
    /// is refused as on a standby (a failover).
    let current = Locked(0)
    var client: PostgresClient { clients[current.value] }
    let logger: Logger
    /// Whether connecting works, from the pool's log and its leases.
    let health = Locked(Health())

    public init(_ url: DatabaseURL, name: String, maximum: Int, leaseDeadline: Duration = .seconds(10), logger: Logger) {
        precondition(maximum >= 1, "a pool holds at least one connection")
        (self.name, self.maximum, self.leaseDeadline, self.logger, self.url) = (name, maximum, leaseDeadline, logger, url)
        let health = self.health
        var background = Logger(label: logger.label) { _ in PoolWatch(inner: logger.handler, health: health, url: url) }
        background[metadataKey: "pool"] = "\(name)"
        clients = url.endpoints.map { endpoint in
            var configuration = url.clientConfiguration(to: endpoint)
            configuration.options.minimumConnections = 0
            configuration.options.maximumConnections = maximum
            configuration.options.keepAliveBehavior = .init(frequency: Self.restingCheck)
            return PostgresClient(configuration: configuration, backgroundLogger: background)
        }
    }

    /// Keeps the pool's connections until the process shuts down (or this task is cancelled). With
    /// several hosts, first looks for the one taking writes.
    public func run() async throws {
        guard clients.count > 1 else { return await clients[0].run() }
        probe()
        await withDiscardingTaskGroup { group in
            for client in clients { group.addTask { await client.run() } }
        }
    }

    /// Runs `body` on a store over one of the pool's connections, given back when it ends.
    ///
    /// Either the body runs or the call fails before it starts, never both: a lease that comes as the
    /// wait gives up is handed back unused (a board change is not made after its dispatcher was told
    /// "nothing was changed"). A connection whose query passed its deadline, or whose body was
    /// cancelled, is closed before it goes back, so the next caller never gets it.
    @discardableResult
    public func withStore<R: Sendable>(
        actorID: Int64? = nil, queryDeadline: Duration? = nil,
        _ body: @escaping @Sendable (CentralStore) async throws -> R
    ) async throws -> R {
        if let reason = health.value.outage {
            probe()
            throw TeamworkError(.unavailable, reason)
        }
        let lease = Locked(Lease.waiting)
        let (client, logger, limit, name, maximum, health) = (client, logger, leaseDeadline, name, maximum, health)
        func claim(_ outcome: Lease) -> Bool {
            lease.mutate { state in
                guard state == .waiting else { return false }
                state = outcome
                return true
            }
        }
        do {
            return try await withThrowingTaskGroup(of: R?.self) { group in
                group.addTask {
                    do {
                        return try await client.withConnection { connection in
                            guard claim(.leased) else { throw CancellationError() }
                            do {
                                let result = try await CentralStore.lend(
                                    connection, actorID: actorID, queryDeadline: queryDeadline, logger: logger, body)
                                health.mutate { $0.failing = nil }
                                return result
                            } catch {
                                if error is QueryDeadlineExceeded || Task.isCancelled { try? await connection.close() }
                                // A write refused as on a standby: the primary moved (a failover); look for it.
                                if StoreError.isStandby(error) { self.probe(force: true) }
                                throw error
                            }
                        }
                    } catch  where lease.value != .leased {
                        // The pool's own failure (shut down, or the wait given up): never the body's.
                        if lease.value == .abandoned || error is CancellationError { throw error }
                        throw TeamworkError(.unavailable, "no connection to the master for the \(name): \(error)")
                    }
                }
                // Until the lease comes: given up at the deadline, or as soon as the pool fails to connect.
                group.addTask {
                    let end = ContinuousClock.now + limit
                    while lease.value == .waiting {
                        if let reason = health.value.outage, claim(.abandoned) { throw TeamworkError(.unavailable, reason) }
                        if ContinuousClock.now >= end, claim(.abandoned) {
                            let refused = health.value.refused.map { "; it refused more: \($0)" } ?? ""
                            throw TeamworkError(
                                .unavailable,
                                "no connection to the master for the \(name) within \(limit) (at most \(maximum) open\(refused)): it is unreachable or every connection is busy"
                            )
                        }
                        try await Task.sleep(for: .milliseconds(50))
                    }
                    return nil
                }
                defer { group.cancelAll() }
                while let next = try await group.next() {
                    if let result = next { return result }
                }
                throw CancellationError()
            }
        } catch {
            throw StoreError.map(error)
        }
    }

    /// Where one call's lease stands: the body runs only if it moves from waiting to leased, the
    /// wait fails only if it moves from waiting to abandoned.
    enum Lease: Sendable {
        case waiting, leased, abandoned
    }

    /// Whether the master can be reached, from the pool's log and its connections' answers.
    struct Health: Sendable {
        /// Why the master cannot be reached: the pool's last attempt to connect failed (not for too many
        /// connections), and no connection has answered since. A call fails at once while it is set.
        var failing: String?
        /// The last refusal for too many connections: the master answered, so calls wait; said when a
        /// wait runs out.
        var refused: String?
        /// Why a call should not wait.
        var outage: String? { failing }
    }

    private let probing = Locked(false)

    /// While the master cannot be reached, one `SELECT 1` at a time, given up at the deadline: an
    /// answer ends the failing; meanwhile the pool keeps trying to connect by itself, with its growing
    /// pause. (A lease alone proves nothing: a resting connection to a host that went silent is
    /// handed out as readily as a working one.)
    ///
    /// With several hosts the probe is the search for the primary instead: a connection opened as
    /// ``CentralStore/open(_:logger:)`` opens one (libpq's order, `target_session_attrs`), and the host
    /// it reached becomes ``current``.
    private func probe(force: Bool = false) {
        guard
            probing.mutate({ busy in
                defer { busy = true }
                return !busy
            })
        else { return }
        let (client, limit, health, probing, logger) = (client, leaseDeadline, health, probing, logger)
        if clients.count > 1 {
            // Each host may take its whole connect timeout (one that drops packets answers nothing): the
            // search has that for every host, not a lease's few seconds (which never got past a silent first host).
            let (url, current, name) = (url, current, name)
            let search = max(limit, (Duration.seconds(10) + .seconds(5)) * clients.count)
            Task {
                defer { probing.mutate { $0 = false } }
                do {
                    let (connection, index) = try await TeamworkModel.withDeadline(search, timeout: { CancellationError() }) {
                        try await CentralStore.openWithHost(url, logger: logger)
                    }
                    try? await connection.close()
                    let before = current.mutate { now in
                        defer { now = index }
                        return now
                    }
                    if before != index {
                        logger.notice(
                            "the master moved: this pool now uses another host",
                            metadata: ["pool": "\(name)", "host": "\(CentralStore.describe(url.endpoints[index]))"])
                    }
                    health.mutate { $0.failing = nil }
                } catch {
                    if force { health.mutate { $0.failing = "no host of \(url.displayString) takes writes: \(error)" } }
                }
            }
            return
        }
        Task {
            defer { probing.mutate { $0 = false } }
            try? await TeamworkModel.withDeadline(limit, timeout: { CancellationError() }) {
                try await client.withConnection { connection in
                    do {
                        _ = try await CentralStore.lend(connection, actorID: nil, queryDeadline: limit, logger: logger) {
                            try await $0.rows("SELECT 1")
                        }
                        health.mutate { $0.failing = nil }
                    } catch {
                        // A connection that did not answer is not handed to the next caller.
                        try? await connection.close()
                        throw error
                    }
                }
            }
        }
    }
}

/// The pool's log, passed on as it is, read for whether connecting fails: postgres-nio 1.33 says
/// "Connection creation failed" (info) of each failed attempt, with the error. (It has no line for one
/// that succeeds: a connection's answer says so.) A refusal for too many connections (SQLSTATE
/// 53300) is the master answering, not an outage.
struct PoolWatch: LogHandler {
    var inner: any LogHandler
    let health: Locked<StorePool.Health>
    let url: DatabaseURL

    var logLevel: Logger.Level {
        get { min(inner.logLevel, .debug) }
        set { inner.logLevel = newValue }
    }
    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }
    var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        switch event.message.description {
        case "Connection creation failed":
            let error = event.metadata?["psql_error"].map { "\($0)" } ?? "an unknown reason"
            let reason = StoreError.describe(PoolFailure(description: error))
            if error.contains("sqlState: 53300") {
                health.mutate { $0.refused = reason }
            } else {
                health.mutate { $0.failing = "cannot reach the database at \(url.displayString): \(reason)" }
            }
        default: break
        }
        if event.level >= inner.logLevel { inner.log(event: event) }
    }

    struct PoolFailure: Error, CustomStringConvertible {
        var description: String
    }
}
