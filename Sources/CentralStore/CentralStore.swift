import Foundation
import Logging
import PostgresNIO
import TeamworkModel

/// The central store: common data and the master task list in PostgreSQL.
///
/// A store borrows one connection for its lifetime (``withStore(_:actorID:logger:_:)``).
/// Every write runs in a transaction that first records who is acting, so the
/// triggers can write history and the change feed in that same transaction.
public struct CentralStore: Sendable {
    let connection: PostgresConnection
    let logger: Logger
    /// The person on whose behalf changes are made; written into task history.
    public var actorID: Int64?
    /// Long-running services: give up on a query (and the connection) after this
    /// long, rather than wait forever on a connection the server dropped.
    public var queryDeadline: Duration?

    /// Connects, runs `body`, and closes the connection, whatever happens.
    /// Connection failures become `TeamworkError` with code `.unavailable` or `.configuration`.
    ///
    /// Cancellation ends it within ``cancellationGrace``: a body that has not
    /// ended by then has its connection closed under it, so a query in flight
    /// fails instead of holding a shutdown until it answers (PostgresNIO's
    /// queries do not watch for cancellation themselves, and one sent as the
    /// server goes away may never answer).
    @discardableResult
    public static func withStore<R: Sendable>(
        _ url: DatabaseURL,
        actorID: Int64? = nil,
        queryDeadline: Duration? = nil,
        logger: Logger = Logger(label: "teamwork.central-store"),
        _ body: (CentralStore) async throws -> R
    ) async throws -> R {
        let connection = try await open(url, logger: logger)
        do {
            let result = try await lend(connection, actorID: actorID, queryDeadline: queryDeadline, logger: logger, body)
            try? await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw StoreError.map(error)
        }
    }

    /// Runs `body` on a store over `connection` (the caller's to close, or its pool's to take back).
    /// Cancelled, the body has ``cancellationGrace`` to end by itself; one still running then has
    /// the connection closed under it.
    static func lend<R: Sendable>(
        _ connection: PostgresConnection, actorID: Int64?, queryDeadline: Duration?, logger: Logger,
        _ body: (CentralStore) async throws -> R
    ) async throws -> R {
        let store = CentralStore(connection: connection, logger: logger, actorID: actorID, queryDeadline: queryDeadline)
        let ended = Locked(false)
        return try await withTaskCancellationHandler {
            defer { ended.mutate { $0 = true } }
            return try await body(store)
        } onCancel: {
            // A body that notices the cancellation ends on its own (and may still need the
            // connection, for a ROLLBACK); one stuck in a query is freed by closing it.
            Task {
                try? await Task.sleep(for: Self.cancellationGrace)
                if !ended.value { try? await connection.close() }
            }
        }
    }

    /// Connects for as long as the caller likes; ``close()`` ends it. For a
    /// long-lived service that shares one connection among requests (queries
    /// only: a transaction on a shared connection would take in others' queries).
    public static func connect(
        _ url: DatabaseURL, queryDeadline: Duration? = nil,
        logger: Logger = Logger(label: "teamwork.central-store")
    ) async throws -> CentralStore {
        CentralStore(connection: try await open(url, logger: logger), logger: logger, actorID: nil, queryDeadline: queryDeadline)
    }

    /// How long a cancelled ``withStore(_:actorID:queryDeadline:logger:_:)`` body
    /// may take to end by itself before its connection is closed under it.
    static let cancellationGrace = Duration.seconds(3)

    /// Opens a connection to the first of the URL's hosts that answers and, with
    /// `target_session_attrs` other than `any`, takes writes (libpq's order and meaning); the error
    /// of the last host tried when none does. Gives up as soon as the calling task is cancelled.
    static func open(_ url: DatabaseURL, logger: Logger) async throws -> PostgresConnection {
        try await openWithHost(url, logger: logger).connection
    }

    /// ``open(_:logger:)``, and which of the URL's hosts it reached (its index).
    static func openWithHost(_ url: DatabaseURL, logger: Logger) async throws -> (connection: PostgresConnection, host: Int) {
        var failure: any Error = TeamworkError(.unavailable, "no database host in \(url.displayString)")
        for (index, endpoint) in url.endpoints.enumerated() {
            try Task.checkCancellation()
            let connection: PostgresConnection
            do {
                connection = try await open(url, at: endpoint, logger: logger)
            } catch let error as CancellationError {
                throw error
            } catch {
                failure = error
                continue
            }
            do {
                if try await takes(url.targetSession, connection, logger: logger) { return (connection, index) }
                failure = TeamworkError(
                    .unavailable,
                    "the database at \(Self.describe(endpoint)) does not take writes (a standby), as \(url.displayString) asks")
            } catch {
                failure = StoreError.map(error, connecting: url)
            }
            try? await connection.close()
        }
        throw failure
    }

    /// Whether the server behind `connection` is one `target` accepts: for `read-write`, its sessions
    /// take writes; for `primary`, it is not in recovery.
    static func takes(_ target: DatabaseURL.TargetSession, _ connection: PostgresConnection, logger: Logger) async throws -> Bool {
        switch target {
        case .any:
            return true
        case .readWrite:
            let rows = try await connection.query("SELECT current_setting('transaction_read_only') = 'off'", logger: logger).collect()
            return try rows.first?.decode(Bool.self) == true
        case .primary:
            let rows = try await connection.query("SELECT NOT pg_is_in_recovery()", logger: logger).collect()
            return try rows.first?.decode(Bool.self) == true
        }
    }

    static func describe(_ endpoint: DatabaseURL.Endpoint) -> String {
        switch endpoint {
        case .tcp(let host, let port): "\(host):\(port)"
        case .unixSocket(let path): path
        }
    }

    /// Opens a connection to one host, giving up as soon as the calling task is cancelled
    /// (a connection that arrives after that is closed, never leaked).
    private static func open(_ url: DatabaseURL, at endpoint: DatabaseURL.Endpoint, logger: Logger) async throws -> PostgresConnection {
        // Whichever comes second, the caller giving up or the connection arriving, closes it: a
        // connection is never dropped unclosed (postgres-nio asserts on that, and it leaks a socket).
        let handover = Locked<(gaveUp: Bool, arrived: PostgresConnection?)>((false, nil))
        do {
            let configuration = try url.connectionConfiguration(to: endpoint)
            let limit = Duration.nanoseconds(configuration.options.connectTimeout.nanoseconds) + .seconds(5)
            let connection = try await TeamworkModel.withDeadline(limit, timeout: { QueryDeadlineExceeded(limit: limit) }) {
                let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
                let abandoned = handover.mutate { state -> Bool in
                    if state.gaveUp || Task.isCancelled { return true }
                    state.arrived = connection
                    return false
                }
                if abandoned {
                    try? await connection.close()
                    throw CancellationError()
                }
                return connection
            }
            return connection
        } catch {
            let arrived = handover.mutate { state -> PostgresConnection? in
                state.gaveUp = true
                defer { state.arrived = nil }
                return state.arrived
            }
            if let arrived { try? await arrived.close() }
            throw StoreError.map(error, connecting: url)
        }
    }

    public func close() async {
        try? await connection.close()
    }

    /// False once the connection has failed or been closed.
    public var isOpen: Bool { !connection.isClosed }

    /// Runs `body` in a transaction in which the triggers know the acting person.
    @discardableResult
    func transaction<R: Sendable>(_ body: (PostgresConnection) async throws -> R) async throws -> R {
        let actor = actorID.map(String.init) ?? ""
        do {
            return try await connection.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT set_config('teamwork.actor_id', \(actor), true)", logger: logger)
                return try await body(connection)
            }
        } catch let error as PostgresTransactionError {
            throw StoreError.map(error.closureError ?? error.beginError ?? error.commitError ?? error)
        }
    }

    /// Runs one statement and collects its rows.
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        guard let queryDeadline else { return try await connection.query(query, logger: logger).collect() }
        let (connection, logger) = (self.connection, self.logger)
        return try await Self.withDeadline(queryDeadline, connection: connection) {
            try await connection.query(query, logger: logger).collect()
        }
    }
}
