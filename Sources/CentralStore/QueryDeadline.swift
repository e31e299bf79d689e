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
    static func withDeadline<T: Sendable>(
        _ limit: Duration, connection: PostgresConnection,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await TeamworkModel.withDeadline(
            limit, timeout: { QueryDeadlineExceeded(limit: limit) },
            expired: { Task { try? await connection.close() } }, body)
    }
}

extension CentralStore {
    /// The master's client connections now and its `max_connections`: how close a burst came to the limit.
    public func clientConnections() async throws -> (open: Int, limit: Int) {
        try await rows(
            """
            SELECT (SELECT count(*)::int FROM pg_stat_activity WHERE backend_type = 'client backend'),
                   current_setting('max_connections')::int
            """)[0].decode((Int, Int).self)
    }
}
