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
/// ever while it retries (vapor/postgres-nio#565). While the pool's last attempt to connect failed
/// (it says so in its log, "Connection creation failed", which the pool watches), a call fails at
/// once with that reason, as a connection of its own would have: a device the master vouched for
/// is then answered from memory without waiting. Each such call still asks the pool, so the pool
/// keeps trying (postgres-nio's pause: 0.1 s, a quarter longer each time, at most a minute), and
/// the first connection it makes ends the failing. The body runs as ``CentralStore/withStore(_:actorID:queryDeadline:logger:_:)``'s
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
    let client: PostgresClient
    let logger: Logger
    /// Why the pool's last attempt to connect failed, until one succeeds or a lease comes.
    let failing = Locked<String?>(nil)

    public init(_ url: DatabaseURL, name: String, maximum: Int, leaseDeadline: Duration = .seconds(10), logger: Logger) {
        precondition(maximum >= 1, "a pool holds at least one connection")
        var configuration = url.clientConfiguration()
        configuration.options.minimumConnections = 0
        configuration.options.maximumConnections = maximum
        (self.name, self.maximum, self.leaseDeadline, self.logger) = (name, maximum, leaseDeadline, logger)
        let failing = self.failing
        var background = Logger(label: logger.label) { _ in PoolWatch(inner: logger.handler, failing: failing, url: url) }
        background[metadataKey: "pool"] = "\(name)"
        client = PostgresClient(configuration: configuration, backgroundLogger: background)
    }

    /// Keeps the pool's connections until the process shuts down (or this task is cancelled).
    public func run() async throws {
        await client.run()
    }

    /// Runs `body` on a store over one of the pool's connections, given back when it ends.
    @discardableResult
    public func withStore<R: Sendable>(
        actorID: Int64? = nil, queryDeadline: Duration? = nil,
        _ body: @escaping @Sendable (CentralStore) async throws -> R
    ) async throws -> R {
        if let reason = failing.value {
            probe()
            throw TeamworkError(.unavailable, reason)
        }
        let leased = Locked(false)
        let (client, logger, limit, name, maximum, failing) = (client, logger, leaseDeadline, name, maximum, failing)
        do {
            return try await withThrowingTaskGroup(of: R?.self) { group in
                group.addTask {
                    try await client.withConnection { connection in
                        leased.mutate { $0 = true }
                        return try await CentralStore.lend(
                            connection, actorID: actorID, queryDeadline: queryDeadline, logger: logger, body)
                    }
                }
                // Until the lease comes: given up at the deadline, or as soon as the pool fails to connect.
                group.addTask {
                    let end = ContinuousClock.now + limit
                    while !leased.value {
                        if let reason = failing.value { throw TeamworkError(.unavailable, reason) }
                        guard ContinuousClock.now < end else {
                            throw TeamworkError(
                                .unavailable,
                                "no connection to the master for the \(name) within \(limit) (at most \(maximum) open): it is unreachable or every connection is busy"
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

    private let probing = Locked(false)

    /// While the pool fails, one lease at a time that does nothing, given up at the deadline: the
    /// pool tries to connect again only for a caller. A lease that comes (a connection works) ends
    /// the failing.
    private func probe() {
        guard
            probing.mutate({ busy in
                defer { busy = true }
                return !busy
            })
        else { return }
        let (client, limit, failing, probing) = (client, leaseDeadline, failing, probing)
        Task {
            defer { probing.mutate { $0 = false } }
            try? await TeamworkModel.withDeadline(limit, timeout: { CancellationError() }) {
                try await client.withConnection { _ in failing.mutate { $0 = nil } }
            }
        }
    }
}

/// The pool's log, passed on as it is, read for whether connecting works: postgres-nio says
/// "Connection creation failed" (info) and "Connection established" (debug) of each attempt.
struct PoolWatch: LogHandler {
    var inner: any LogHandler
    let failing: Locked<String?>
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
            failing.mutate {
                $0 = "cannot reach the database at \(url.displayString): \(StoreError.describe(PoolFailure(description: error)))"
            }
        case "Connection established":
            failing.mutate { $0 = nil }
        default: break
        }
        if event.level >= inner.logLevel { inner.log(event: event) }
    }

    struct PoolFailure: Error, CustomStringConvertible {
        var description: String
    }
}
