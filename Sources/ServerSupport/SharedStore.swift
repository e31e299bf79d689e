import CentralStore
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import TeamworkModel

/// The master connections a web surface's requests share (the sync endpoint's, the board's reads):
/// a ``StorePool`` of at most `maximum`, so a burst of requests waits its turn on the surface's own
/// connections and never opens more. Its routes see the store as `Audience`: the sync endpoint's as
/// an ``EndpointStore`` (only what it may ask), the board's as the whole ``CentralStore`` (a manager's). Opening a PostgreSQL connection per request would cost more
/// than the request itself. Run it as a service of the application: it closes its connections when
/// the server shuts down.
///
/// A request whose connection died under it (a query past its deadline, the server gone) is tried
/// once more on another connection, which the pool opens in its place.
public final class SharedStore<Audience: Sendable>: Service, Sendable {
    public let pool: StorePool
    public let logger: Logger
    let view: @Sendable (CentralStore) -> Audience

    /// Each statement within 10 s: a connection dropped by the server can leave a query waiting for ever.
    static var queryDeadline: Duration { .seconds(10) }

    /// A request waits at most `leaseDeadline` for a connection, then gets 503.
    public init(
        url: DatabaseURL, name: String, maximum: Int, leaseDeadline: Duration = .seconds(5), logger: Logger,
        as view: @escaping @Sendable (CentralStore) -> Audience
    ) {
        pool = StorePool(url, name: name, maximum: maximum, leaseDeadline: leaseDeadline, logger: logger)
        self.logger = logger
        self.view = view
    }

    /// Any failure to reach the store comes out as ``StoreUnavailable`` (503),
    /// logged here once: no route can answer it with a 500. A refusal of the store's (no such
    /// task, a stale version) goes on as it is, to answer for itself (``ShownError``).
    public func run<R: Sendable>(_ body: @escaping @Sendable (Audience) async throws -> R) async throws -> R {
        do {
            return try await attempt(body)
        } catch let error as TeamworkError where error.status.code < 500 {
            throw error
        } catch let error as any HTTPResponseError where !(error is TeamworkError) {
            throw error
        } catch is CancellationError {
            throw StoreUnavailable()
        } catch {
            logger.error("the central store is not available", metadata: ["error": "\(error)"])
            throw StoreUnavailable()
        }
    }

    private func attempt<R: Sendable>(_ body: @escaping @Sendable (Audience) async throws -> R) async throws -> R {
        let (lost, view) = (Locked(false), view)
        do {
            return try await pool.withStore(queryDeadline: Self.queryDeadline) { store in
                do {
                    return try await body(view(store))
                } catch {
                    if !store.isOpen || error is QueryDeadlineExceeded { lost.mutate { $0 = true } }
                    throw error
                }
            }
        } catch  where lost.value {
            // The connection died under us: once more, on another.
            logger.warning("central store connection lost; reconnecting", metadata: ["error": "\(error)"])
            return try await pool.withStore(queryDeadline: Self.queryDeadline) { try await body(view($0)) }
        }
    }

    /// Keeps the pool until the application shuts down.
    public func run() async throws {
        try await pool.run()
    }
}

extension SharedStore where Audience == any EndpointStore {
    /// The sync endpoint's: two connections, and its routes reach only what an ``EndpointStore`` offers.
    public convenience init(endpoint url: DatabaseURL, maximum: Int = 2, leaseDeadline: Duration = .seconds(5), logger: Logger) {
        self.init(url: url, name: "sync endpoint", maximum: maximum, leaseDeadline: leaseDeadline, logger: logger) { $0 }
    }
}

extension SharedStore where Audience == any BoardReads {
    /// A manager's surface, the board's reads: what ``BoardReads`` lists of the store.
    public convenience init(manager url: DatabaseURL, name: String, maximum: Int, logger: Logger) {
        self.init(url: url, name: name, maximum: maximum, logger: logger) { $0 }
    }
}
