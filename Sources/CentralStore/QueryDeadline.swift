import Foundation
import PostgresNIO
import TeamworkModel

/// A query of a long-running service that did not finish within its store's
/// ``CentralStore/queryDeadline``. The connection is closed and should be
/// replaced: PostgresNIO can leave a query waiting forever when it is sent just
/// as the server terminates the connection (seen when PostgreSQL shuts down).
public struct QueryDeadlineExceeded: Error, CustomStringConvertible {
    public var limit: Duration
    public var description: String { "the database did not answer within \(limit); the connection was dropped" }
}

extension CentralStore {
    /// Checks that the connection answers within `limit` (a dropped connection can
    /// leave the first query after the drop waiting forever): services call it
    /// before each pass, so a dead connection costs seconds, not the query deadline.
    public func ping(within limit: Duration = .seconds(2)) async throws {
        let connection = self.connection
        let logger = self.logger
        _ = try await Self.withDeadline(limit, connection: connection) {
            try await connection.query("SELECT 1", logger: logger).collect().count
        }
    }

    /// Runs `body` (one round trip on this store's connection) but gives up after
    /// `limit`, or when the calling task is cancelled. On giving up the
    /// connection is closed in the background and the stuck call abandoned.
    static func withDeadline<T: Sendable>(_ limit: Duration, connection: PostgresConnection,
                                          _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let outcome = FirstOutcome<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                outcome.install(continuation)
                let timer = Task {
                    try await Task.sleep(for: limit)
                    if outcome.resume(.failure(QueryDeadlineExceeded(limit: limit))) {
                        Task { try? await connection.close() }
                    }
                }
                Task {
                    do { outcome.resume(.success(try await body())) } catch { outcome.resume(.failure(error)) }
                    timer.cancel()
                }
            }
        } onCancel: {
            outcome.resume(.failure(CancellationError()))
        }
    }
}

/// Resumes a continuation with whichever outcome comes first; later ones are dropped.
private final class FirstOutcome<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, any Error>?
    private var early: Result<T, any Error>?
    private var done = false

    func install(_ continuation: CheckedContinuation<T, any Error>) {
        lock.lock()
        if let early {
            lock.unlock()
            continuation.resume(with: early)
            return
        }
        self.continuation = continuation
        lock.unlock()
    }

    /// True when this outcome was the first.
    @discardableResult
    func resume(_ result: Result<T, any Error>) -> Bool {
        lock.lock()
        guard !done else { lock.unlock(); return false }
        done = true
        guard let continuation else {
            early = result
            lock.unlock()
            return true
        }
        self.continuation = nil
        lock.unlock()
        continuation.resume(with: result)
        return true
    }
}
