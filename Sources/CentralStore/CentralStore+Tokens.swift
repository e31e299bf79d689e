import Foundation
import PostgresNIO
import TeamworkModel

extension CentralStore {
    static let tokenColumns = "a.id, a.person_id, a.label, a.created_by, a.created_at, a.last_used_at, a.revoked_at"

    /// Issues a new token for a person. Returns the record and the secret, which
    /// is not stored anywhere (only its SHA-256 is) and cannot be shown again.
    public func issueToken(personID: Int64, label: String) async throws -> (token: AccessToken, secret: String) {
        let secret = TokenSecret.generate()
        // teamwork_issue_token locks the person: a deactivation in flight comes wholly before or after.
        let token = try await transaction { connection in
            let issued = try await connection.query("SELECT teamwork_issue_token(\(personID), \(secret), \(label))", logger: logger)
                .collect()[0].decode(Int64.self)
            let rows = try await connection.query(
                "SELECT \(unescaped: Self.tokenColumns) FROM access_tokens a WHERE a.id = \(issued)", logger: logger
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
            let revoked = try await connection.query("SELECT teamwork_revoke_token(\(id))", logger: logger).collect()
            switch try revoked.first?.decode(Bool?.self) {
            case true?:
                let rows = try await connection.query(
                    "SELECT \(unescaped: Self.tokenColumns) FROM access_tokens a WHERE a.id = \(id)", logger: logger
                ).collect()
                return try AccessToken(row: rows[0])
            case false?: throw TeamworkError.conflict("token \(id) is already revoked")
            case nil: throw TeamworkError.notFound("no token with id \(id)")
            }
        }
    }

    /// Records that the tokens with these SHA-256s (hex) were used (the sync endpoint's remembered
    /// answers, gathered for a minute), as ``authenticate(secret:)`` does for the one it checks
    /// (sql/functions/teamwork_record_token_use.sql: at most once a minute each, never waiting).
    public func recordUse(ofTokens digests: [String]) async throws {
        guard !digests.isEmpty else { return }
        _ = try await rows("SELECT teamwork_record_token_use(\(digests)::text[])")
    }

    /// The person a secret belongs to, if it is known and not revoked (sql/functions/teamwork_authenticate.sql,
    /// which records its use). One statement: safe on a connection shared by concurrent requests.
    public func authenticate(secret: String) async throws -> Person? {
        guard TokenSecret.isWellFormed(secret) else { return nil }
        let rows = try await rows(
            """
            SELECT \(unescaped: Columns.person) FROM teamwork_authenticate(\(secret)) AS t(person_id)
            JOIN people p ON p.id = t.person_id
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
        self.init(
            id: id, personID: person, label: label, createdBy: createdBy, createdAt: createdAt, lastUsedAt: lastUsed, revokedAt: revoked)
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
            teams[try PostgresRandomAccessRow(row)["person_id"].decode(Int64.self), default: []].append(try Team(row: row))
        }
        return try await rows(
            """
            SELECT \(unescaped: Columns.person), a.token_hash FROM access_tokens a
            JOIN people p ON p.id = a.person_id
            WHERE a.revoked_at IS NULL AND p.deactivated_at IS NULL
            """
        ).map { row in
            let person = try Person(row: row)
            return (try PostgresRandomAccessRow(row)["token_hash"].decode(Data.self), person, teams[person.id] ?? [])
        }
    }
}

/// A phone's pairing, as a manager starts it: the one-time code the link carries (shown once,
/// stored only as its SHA-256) and when it stops working.
public struct DevicePairing: Sendable, Equatable {
    public var id: Int64
    public var personID: Int64
    public var code: String
    public var expiresAt: Date
}

extension CentralStore {
    /// How long a pairing link works unless told otherwise, and at most (sql/0034_device_pairing.sql).
    public static let pairingMinutes = 10
    public static let maximumPairingMinutes = 60

    /// Starts pairing a phone for a person (docs/phone.md): whoever may issue them a token may
    /// (sql/functions/teamwork_check_token_issuer.sql). The code is good once, for `minutes`.
    public func pairDevice(personID: Int64, minutes: Int = pairingMinutes) async throws -> DevicePairing {
        let code = TokenSecret.randomBase64URL()
        return try await transaction { connection in
            let id = try await connection.query(
                "SELECT teamwork_pair_device(\(personID), \(code), \(Int32(clamping: minutes)))", logger: logger
            )
            .collect()[0].decode(Int64.self)
            let expires = try await connection.query("SELECT expires_at FROM device_pairings WHERE id = \(id)", logger: logger)
                .collect()[0].decode(Date.self)
            return DevicePairing(id: id, personID: personID, code: code, expiresAt: expires)
        }
    }

    /// A redeemed pairing: whose phone it is now, its token (the secret shown once) and the pairing.
    public struct RedeemedPairing: Sendable, Equatable {
        public var personID: Int64
        public var tokenID: Int64
        public var pairingID: Int64
        public var secret: String
    }

    /// Redeems a pairing code for a token of the device's own named `deviceName`; `nil` when the
    /// code is unknown, used, expired, its person has left or their role changed since.
    public func redeemPairing(code: String, deviceName: String) async throws -> RedeemedPairing? {
        let secret = TokenSecret.generate()
        // One statement (safe on the sync endpoint's shared connection): the function is its own transaction.
        let found: PostgresRow?
        do {
            found = try await rows("SELECT * FROM teamwork_redeem_pairing(\(code), \(secret), \(deviceName))").first
        } catch {
            throw StoreError.map(error)
        }
        guard let row = found else { return nil }
        let (person, token, pairing) = try row.decode((Int64, Int64, Int64).self)
        return RedeemedPairing(personID: person, tokenID: token, pairingID: pairing, secret: secret)
    }

    /// Whose phone pairing code `code` would pair ("Ann Field"), before anything is redeemed; `nil`
    /// when the code is not live (unknown, used, expired, its person gone or in another role).
    public func pairingPerson(code: String) async throws -> String? {
        do {
            return try await rows("SELECT first_name, last_name FROM teamwork_pairing_person(\(code))").first.map { row in
                let (first, last) = try row.decode((String, String).self)
                return "\(first) \(last)".trimmingCharacters(in: .whitespaces)
            }
        } catch {
            throw StoreError.map(error)
        }
    }

    /// Cancels a person's pairing links not yet used; how many there were.
    public func cancelPairings(personID: Int64) async throws -> Int {
        try await transaction { connection in
            Int(try await connection.query("SELECT teamwork_cancel_pairings(\(personID))", logger: logger).collect()[0].decode(Int32.self))
        }
    }

    /// A phone signing out: revokes the token it holds. True when the token was live.
    @discardableResult
    public func signOutDevice(secret: String) async throws -> Bool {
        guard TokenSecret.isWellFormed(secret) else { return false }
        return try await rows("SELECT teamwork_sign_out_device(\(secret))")[0].decode(Bool.self)
    }
}
