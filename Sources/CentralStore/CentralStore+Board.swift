import Foundation
import PostgresNIO
import TeamworkModel

/// A signed-in dispatcher on the board (sql/0022_board_sessions.sql).
public struct BoardSession: Sendable, Equatable {
    public var person: Person
    /// The token every form of this session carries.
    public var csrf: String
    public var expiresAt: Date
}

/// What a sign-in to the board came to.
public enum BoardSignIn: Sendable, Equatable {
    /// The cookie's value (shown once, stored only hashed) and the session.
    case signedIn(secret: String, session: BoardSession)
    /// No such token, revoked, or its person deactivated.
    case unknownToken
    /// A worker's token: the board is for managers and admins.
    case notAManager
}

extension CentralStore {
    /// Opens a board session for the person `tokenSecret` belongs to, if they are an active
    /// manager or admin (sql/functions/teamwork_open_board_session.sql: the person is the token's,
    /// never one the caller names).
    public func openBoardSession(tokenSecret: String, lifetime: Duration) async throws -> BoardSignIn {
        guard TokenSecret.isWellFormed(tokenSecret) else { return .unknownToken }
        let secret = TokenSecret.randomBase64URL()
        let csrf = TokenSecret.randomBase64URL()
        let seconds = Int(lifetime.components.seconds)
        let opened = try await rows(
            """
            SELECT s.outcome, s.expires_at, \(unescaped: Columns.person)
            FROM teamwork_open_board_session(\(tokenSecret), \(secret), \(csrf), \(seconds)::integer) s
            LEFT JOIN people p ON p.id = s.person_id
            """
        )
        guard let row = opened.first else { return .unknownToken }
        let r = PostgresRandomAccessRow(row)
        switch try r["outcome"].decode(String.self) {
        case "signed_in":
            let session = BoardSession(
                person: try Person(row: row), csrf: csrf,
                expiresAt: try r["expires_at"].decode(Date.self))
            return .signedIn(secret: secret, session: session)
        case "not_a_manager": return .notAManager
        default: return .unknownToken
        }
    }

    /// The session a cookie holds, if it is open: not expired, opened with a live token of its own
    /// person, who is active and still a manager or an admin (sql/functions/teamwork_board_session.sql).
    public func boardSession(secret: String) async throws -> BoardSession? {
        guard secret.utf8.count == 43 else { return nil }
        let rows = try await rows(
            """
            SELECT s.csrf, s.expires_at, \(unescaped: Columns.person)
            FROM teamwork_board_session(\(secret)) s JOIN people p ON p.id = s.person_id
            """
        )
        guard let row = rows.first else { return nil }
        let r = PostgresRandomAccessRow(row)
        return BoardSession(
            person: try Person(row: row), csrf: try r["csrf"].decode(String.self),
            expiresAt: try r["expires_at"].decode(Date.self))
    }

    /// Ends a session (sign-out): the cookie is worth nothing from now on.
    public func closeBoardSession(secret: String) async throws {
        _ = try await rows("SELECT teamwork_close_board_session(\(secret))")
    }

    /// Whether this connection's role may do what the board does (sign people in, change tasks):
    /// a role in `teamwork_manager`, or the schema owner.
    public func canActAsBoard() async throws -> Bool {
        try await rows(
            """
            SELECT has_function_privilege('teamwork_open_board_session(text, text, text, integer)', 'EXECUTE')
                   AND has_table_privilege('tasks', 'UPDATE') AND has_table_privilege('tasks', 'INSERT')
            """
        )[0].decode(Bool.self)
    }

    /// What a live board compares to know whether to show itself again: the change feed's last
    /// position, the open conflicts (how many, and the newest recorded) and the newest customer's
    /// answer, which change without the feed moving (a change the sync endpoint refused, a conflict
    /// decided, a visit confirmed on the customer's page).
    public func boardHead() async throws -> String {
        let r = PostgresRandomAccessRow(
            try await rows(
                """
                SELECT (SELECT coalesce(max(position), 0) FROM change_feed) AS feed,
                       (SELECT count(*) FROM field_changes WHERE conflict IS NOT NULL AND resolved_at IS NULL) AS open,
                       (SELECT coalesce(max(id), 0) FROM field_changes WHERE conflict IS NOT NULL AND resolved_at IS NULL) AS newest,
                       (SELECT coalesce((extract(epoch FROM max(answered_at)) * 1000000)::bigint, 0) FROM appointments
                         WHERE answered_at IS NOT NULL) AS answered
                """)[0])
        return "\(try r["feed"].decode(Int64.self)).\(try r["open"].decode(Int64.self)).\(try r["newest"].decode(Int64.self))"
            + ".\(try r["answered"].decode(Int64.self))"
    }

    /// The last position of the master's change feed (0 when empty).
    public func feedHead() async throws -> Int64 {
        try await rows("SELECT coalesce(max(position), 0) FROM change_feed")[0].decode(Int64.self)
    }
}
