import Foundation
import PostgresNIO
import TeamworkModel

extension CentralStore {
    static let tokenColumns = "a.id, a.person_id, a.label, a.created_by, a.created_at, a.last_used_at, a.revoked_at"

    /// Issues a new token for a person. Returns the record and the secret, which
    /// is not stored anywhere (only its SHA-256 is) and cannot be shown again.
    public func issueToken(personID: Int64, label: String) async throws -> (token: AccessToken, secret: String) {
        guard try await person(id: personID).isActive else {
            throw TeamworkError.conflict("person \(personID) is deactivated: reactivate them before issuing a token")
        }
        let secret = TokenSecret.generate()
        let token = try await transaction { connection in
            let rows = try await connection.query(
                """
                INSERT INTO access_tokens AS a (person_id, token_hash, label, created_by)
                VALUES (\(personID), sha256(convert_to(\(secret), 'UTF8')), \(label), \(actorID))
                RETURNING \(unescaped: Self.tokenColumns)
                """,
                logger: logger
            ).collect()
            return try AccessToken(row: rows[0])
        }
        return (token, secret)
    }

    /// Tokens, newest first; one person's when `personID` is given.
    public func listTokens(personID: Int64? = nil) async throws -> [AccessToken] {
        try await rows(
            """
            SELECT \(unescaped: Self.tokenColumns) FROM access_tokens a
            WHERE \(personID)::bigint IS NULL OR a.person_id = \(personID)
            ORDER BY a.id DESC
            """
        ).map(AccessToken.init(row:))
    }

    /// Revokes a token; it is refused from then on. Revoking twice is a conflict.
    public func revokeToken(id: Int64) async throws -> AccessToken {
        try await transaction { connection in
            let rows = try await connection.query(
                """
                UPDATE access_tokens AS a SET revoked_at = now() WHERE a.id = \(id) AND a.revoked_at IS NULL
                RETURNING \(unescaped: Self.tokenColumns)
                """,
                logger: logger
            ).collect()
            if let row = rows.first { return try AccessToken(row: row) }
            let exists = try await connection.query("SELECT 1 FROM access_tokens WHERE id = \(id)", logger: logger).collect()
            throw exists.isEmpty ? TeamworkError.notFound("no token with id \(id)") : TeamworkError.conflict("token \(id) is already revoked")
        }
    }

    /// When a token's use is recorded: at most once a minute, so a busy device does not turn every
    /// request into a write.
    static let useDue = "(last_used_at IS NULL OR last_used_at < now() - interval '1 minute')"

    /// Records that the tokens with these SHA-256s (hex) were used (the sync endpoint's remembered
    /// answers, gathered for a minute), as ``authenticate(secret:)`` does for the one it checks.
    /// Never waits for a row another transaction holds (that token's use is simply not recorded
    /// this time): it runs on the connection that hears of revocations, which PostgreSQL delivers
    /// only while it is idle. In id order, so two servers recording at once cannot deadlock.
    public func recordUse(ofTokens digests: [String]) async throws {
        guard !digests.isEmpty else { return }
        _ = try await rows(
            """
            UPDATE access_tokens SET last_used_at = now()
            WHERE id IN (
                SELECT id FROM access_tokens
                WHERE token_hash = ANY (SELECT decode(d, 'hex') FROM unnest(\(digests)::text[]) AS d)
                  AND revoked_at IS NULL AND \(unescaped: Self.useDue)
                ORDER BY id FOR UPDATE SKIP LOCKED
            )
            """
        )
    }

    /// The person a secret belongs to, if it is known and not revoked. Records
    /// its use at most once a minute, so a busy device does not turn every
    /// request into a write. One statement, no transaction: safe on a
    /// connection shared by concurrent requests.
    public func authenticate(secret: String) async throws -> Person? {
        guard TokenSecret.isWellFormed(secret) else { return nil }
        let rows = try await rows(
            """
            WITH hit AS (
                SELECT a.id, a.person_id, a.last_used_at FROM access_tokens a
                WHERE a.token_hash = sha256(convert_to(\(secret), 'UTF8')) AND a.revoked_at IS NULL
            ), touched AS (
                UPDATE access_tokens SET last_used_at = now()
                WHERE id IN (SELECT id FROM hit WHERE \(unescaped: Self.useDue))
            )
            SELECT \(unescaped: Columns.person) FROM hit JOIN people p ON p.id = hit.person_id
            WHERE p.deactivated_at IS NULL
            """
        )
        return try rows.first.map(Person.init(row:))
    }
}

extension AccessToken {
    init(row: PostgresRow) throws {
        let (id, person, label, createdBy, createdAt, lastUsed, revoked) = try row.decode(
            (Int64, Int64, String, Int64?, Date, Date?, Date?).self
        )
        self.init(id: id, personID: person, label: label, createdBy: createdBy, createdAt: createdAt, lastUsedAt: lastUsed, revokedAt: revoked)
    }
}

extension CentralStore {
    /// What a token gives, for every token that `authenticate` would accept now: its SHA-256 (as
    /// stored), its person and their teams (ordered as ``teams(ofPerson:)`` orders them). Two
    /// statements, no transaction: a caller that must not keep an answer a change overtook
    /// listens on ``accessChannel`` first and drops what it loaded if a notification came meanwhile.
    /// The sync endpoint loads it at start, so a fleet reconnecting after a restart does not cost
    /// the master two queries a device.
    public func liveAccess() async throws -> [(digest: Data, person: Person, teams: [Team])] {
        var teams: [Int64: [Team]] = [:]
        for row in try await rows(
            """
            SELECT \(unescaped: Columns.team), m.person_id FROM team_memberships m
            JOIN teams t ON t.id = m.team_id ORDER BY t.slug
            """
        ) {
            teams[try PostgresRandomAccessRow(row)[Columns.teamCount].decode(Int64.self), default: []].append(try Team(row: row))
        }
        return try await rows(
            """
            SELECT \(unescaped: Columns.person), a.token_hash FROM access_tokens a
            JOIN people p ON p.id = a.person_id
            WHERE a.revoked_at IS NULL AND p.deactivated_at IS NULL
            """
        ).map { row in
            let person = try Person(row: row)
            return (try PostgresRandomAccessRow(row)[Columns.personCount].decode(Data.self), person, teams[person.id] ?? [])
        }
    }
}
