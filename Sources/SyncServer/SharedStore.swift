import CentralStore
import Foundation
import Logging
import ServiceLifecycle

/// One connection to the central store, shared by all requests: opening a
/// PostgreSQL connection per request costs more than the request itself.
/// Reconnects on the next use after a failure. Only single-statement queries run
/// on it (no transactions), so concurrent requests can share it. As a service
/// of the application, it closes the connection when the server shuts down.
actor SharedStore: Service {
    let url: DatabaseURL
    let logger: Logger
    private var store: CentralStore?

    init(url: DatabaseURL, logger: Logger) {
        self.url = url
        self.logger = logger
    }

    func run<R: Sendable>(_ body: @Sendable (CentralStore) async throws -> R) async throws -> R {
        let store = try await connected()
        do {
            return try await body(store)
        } catch {
            if !store.isOpen || error is QueryDeadlineExceeded {
                // The connection died under us: forget it, and try once more on a new one.
                self.store = nil
                logger.warning("central store connection lost; reconnecting", metadata: ["error": "\(error)"])
                return try await body(try await connected())
            }
            throw error
        }
    }

    /// Waits for the application's shutdown, then closes the connection.
    func run() async throws {
        try? await gracefulShutdown()
        await store?.close()
        store = nil
    }

    private func connected() async throws -> CentralStore {
        if let store, store.isOpen { return store }
        let fresh = try await CentralStore.connect(url, queryDeadline: .seconds(10), logger: logger)
        store = fresh
        return fresh
    }
}
