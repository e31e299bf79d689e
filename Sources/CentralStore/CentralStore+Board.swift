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
    /// Opens a board session for the person `tokenSecret` belongs to, if they are an
    /// active manager or admin. Sessions that have expired are deleted on the way.
    public func openBoardSession(tokenSecret: String, lifetime: Duration) async throws -> BoardSignIn {
        guard TokenSecret.isWellFormed(tokenSecret) else { return .unknownToken }
        let secret = TokenSecret.randomBase64URL()
        let csrf = TokenSecret.randomBase64URL()
        let seconds = Double(lifetime.components.seconds)
        return try await transaction { connection in
            try await connection.query("DELETE FROM board_sessions WHERE expires_at < now()", logger: logger)
            let found = try await connection.query(
                """
                SELECT a.id, \(unescaped: Columns.person) FROM access_tokens a JOIN people p ON p.id = a.person_id
                WHERE a.token_hash = sha256(convert_to(\(tokenSecret), 'UTF8')) AND a.revoked_at IS NULL
                  AND p.deactivated_at IS NULL
                """,
                logger: logger
            ).collect()
            guard let row = found.first else { return .unknownToken }
            let tokenID = try row.decode(Int64.self)
            let person = try Person(row: row, skipping: 1)
            guard person.role == .manager || person.role == .admin else { return .notAManager }
            let inserted = try await connection.query(
                """
                INSERT INTO board_sessions (secret_hash, person_id, token_id, csrf, expires_at)
                VALUES (sha256(convert_to(\(secret), 'UTF8')), \(person.id), \(tokenID), \(csrf),
                        now() + make_interval(secs => \(seconds)))
                RETURNING expires_at
                """,
                logger: logger
            ).collect()
            return .signedIn(secret: secret, session: BoardSession(person: person, csrf: csrf, expiresAt: try inserted[0].decode(Date.self)))
        }
    }

    /// The session a cookie holds, if it is open: not expired, its token not revoked,
    /// its person active and still a manager or an admin.
    public func boardSession(secret: String) async throws -> BoardSession? {
        guard secret.utf8.count == 43 else { return nil }
        let rows = try await rows(
            """
            SELECT s.csrf, s.expires_at, \(unescaped: Columns.person)
            FROM board_sessions s JOIN people p ON p.id = s.person_id JOIN access_tokens a ON a.id = s.token_id
            WHERE s.secret_hash = sha256(convert_to(\(secret), 'UTF8')) AND s.expires_at > now()
              AND a.revoked_at IS NULL AND p.deactivated_at IS NULL AND p.role IN ('manager', 'admin')
            """
        )
        guard let row = rows.first else { return nil }
        let r = PostgresRandomAccessRow(row)
        let (csrf, expires) = (try r[0].decode(String.self), try r[1].decode(Date.self))
        return BoardSession(person: try Person(row: row, skipping: 2), csrf: csrf, expiresAt: expires)
    }

    /// Ends a session (sign-out): the cookie is worth nothing from now on.
    public func closeBoardSession(secret: String) async throws {
        _ = try await rows("DELETE FROM board_sessions WHERE secret_hash = sha256(convert_to(\(secret), 'UTF8'))")
    }

    /// Whether this connection's role may do what the board does (sign people in, change tasks):
    /// a role in `teamwork_manager`, or the schema owner.
    public func canActAsBoard() async throws -> Bool {
        try await rows(
            """
            SELECT has_table_privilege('board_sessions', 'INSERT') AND has_table_privilege('tasks', 'UPDATE')
                   AND has_table_privilege('tasks', 'INSERT')
            """
        )[0].decode(Bool.self)
    }

    /// The last position of the master's change feed (0 when empty).
    public func feedHead() async throws -> Int64 {
        try await rows("SELECT coalesce(max(position), 0) FROM change_feed")[0].decode(Int64.self)
    }
}
