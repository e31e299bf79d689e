import CentralStore
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import TeamworkModel

/// One connection to the central store, shared by all requests: opening a
/// PostgreSQL connection per request costs more than the request itself.
/// Reconnects on the next use after a failure. Only single-statement queries run
/// on it (no transactions), so concurrent requests can share it. As a service
/// of the application, it closes the connection when the server shuts down.
///
/// Every connection it opens is closed exactly once: requests that arrive
/// while one is being opened wait for that one instead of opening their own,
/// and a connection replaced after a failure is closed, not dropped.
public actor SharedStore: Service {
    public let url: DatabaseURL
    public let logger: Logger
    private var current: Connection?
    private var connecting: Task<Connection, any Error>?
    private var shutDown = false

    /// One opened connection; compared by identity.
    final class Connection: Sendable {
        let store: CentralStore
        init(_ store: CentralStore) { self.store = store }
    }

    public init(url: DatabaseURL, logger: Logger) {
        self.url = url
        self.logger = logger
    }

    /// Any failure to reach the store comes out as ``StoreUnavailable`` (503),
    /// logged here once: no route can answer it with a 500. A refusal of the store's (no such
    /// task, a stale version) goes on as it is, to answer for itself (``ShownError``).
    public func run<R: Sendable>(_ body: @Sendable (CentralStore) async throws -> R) async throws -> R {
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

    private func attempt<R: Sendable>(_ body: @Sendable (CentralStore) async throws -> R) async throws -> R {
        let connection = try await connected()
        do {
            return try await body(connection.store)
        } catch {
            if !connection.store.isOpen || error is QueryDeadlineExceeded {
                // The connection died under us: replace it, and try once more on a new one.
                await discard(connection)
                logger.warning("central store connection lost; reconnecting", metadata: ["error": "\(error)"])
                return try await body(try await connected().store)
            }
            throw error
        }
    }

    /// Waits for the application's shutdown, then closes the connection.
    public func run() async throws {
        try? await gracefulShutdown()
        shutDown = true
        let open = current
        current = nil
        await open?.store.close()
    }

    private func connected() async throws -> Connection {
        if let current {
            if current.store.isOpen { return current }
            await discard(current)
        }
        if let connecting { return try await connecting.value }
        guard !shutDown else { throw CancellationError() }
        let (url, logger) = (self.url, self.logger)
        let task = Task { Connection(try await CentralStore.connect(url, queryDeadline: .seconds(10), logger: logger)) }
        connecting = task
        defer { connecting = nil }
        let fresh = try await task.value
        if shutDown {
            await fresh.store.close()
            throw CancellationError()
        }
        current = fresh
        return fresh
    }

    /// Forgets `connection` if it is still the current one, and closes it.
    private func discard(_ connection: Connection) async {
        if current === connection { current = nil }
        await connection.store.close()
    }
}
