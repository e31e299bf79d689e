import CentralStore
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import TeamworkModel

/// The master connections a web surface's requests share (the sync endpoint's, the board's reads):
/// a ``StorePool`` of at most `maximum`, so a burst of requests waits its turn on the surface's own
/// connections and never opens more. Opening a PostgreSQL connection per request would cost more
/// than the request itself. Run it as a service of the application: it closes its connections when
/// the server shuts down.
///
/// A request whose connection died under it (a query past its deadline, the server gone) is tried
/// once more on another connection, which the pool opens in its place.
public final class SharedStore: Service, Sendable {
    public let pool: StorePool
    public let logger: Logger

    /// Each statement within 10 s: a connection dropped by the server can leave a query waiting for ever.
    static let queryDeadline = Duration.seconds(10)

    /// A request waits at most `leaseDeadline` for a connection, then gets 503.
    public init(url: DatabaseURL, name: String, maximum: Int, leaseDeadline: Duration = .seconds(5), logger: Logger) {
        pool = StorePool(url, name: name, maximum: maximum, leaseDeadline: leaseDeadline, logger: logger)
        self.logger = logger
    }

    /// Any failure to reach the store comes out as ``StoreUnavailable`` (503),
    /// logged here once: no route can answer it with a 500. A refusal of the store's (no such
    /// task, a stale version) goes on as it is, to answer for itself (``ShownError``).
    public func run<R: Sendable>(_ body: @escaping @Sendable (CentralStore) async throws -> R) async throws -> R {
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

    private func attempt<R: Sendable>(_ body: @escaping @Sendable (CentralStore) async throws -> R) async throws -> R {
        let lost = Locked(false)
        do {
            return try await pool.withStore(queryDeadline: Self.queryDeadline) { store in
                do {
                    return try await body(store)
                } catch {
                    if !store.isOpen || error is QueryDeadlineExceeded { lost.mutate { $0 = true } }
                    throw error
                }
            }
        } catch  where lost.value {
            // The connection died under us: once more, on another.
            logger.warning("central store connection lost; reconnecting", metadata: ["error": "\(error)"])
            return try await pool.withStore(queryDeadline: Self.queryDeadline, body)
        }
    }

    /// Keeps the pool until the application shuts down.
    public func run() async throws {
        try await pool.run()
    }
}
