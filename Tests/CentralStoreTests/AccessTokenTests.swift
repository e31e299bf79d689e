import Foundation
import PostgresNIO
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

@Suite("Access tokens")
struct AccessTokenTests {
    @Test func anIssuedTokenSignsItsPersonInUntilRevoked() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let (token, secret) = try await store.issueToken(personID: world.ann.id, label: "phone")
            #expect(TokenSecret.isWellFormed(secret))
            #expect(token.personID == world.ann.id && token.label == "phone" && !token.isRevoked)

            #expect(try await store.authenticate(secret: secret)?.id == world.ann.id)
            #expect(try await store.listTokens(personID: world.ann.id).first?.lastUsedAt != nil)

            let revoked = try await store.revokeToken(id: token.id)
            #expect(revoked.isRevoked)
            #expect(try await store.authenticate(secret: secret) == nil)
            await #expect(throws: TeamworkError.conflict("token \(token.id) is already revoked")) {
                try await store.revokeToken(id: token.id)
            }
            await #expect(throws: TeamworkError.notFound("no token with id 999")) { try await store.revokeToken(id: 999) }
        }
    }

    @Test func useIsRecordedAtMostOnceAMinute() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let (token, secret) = try await store.issueToken(personID: world.ann.id, label: "")
            _ = try await store.authenticate(secret: secret)
            let first = try #require(try await store.listTokens(personID: world.ann.id).first?.lastUsedAt)
            _ = try await store.authenticate(secret: secret)
            #expect(try await store.listTokens(personID: world.ann.id).first?.lastUsedAt == first)
            try await store.connection.query(
                "UPDATE access_tokens SET last_used_at = now() - interval '2 minutes' WHERE id = \(token.id)", logger: store.logger
            )
            _ = try await store.authenticate(secret: secret)
            #expect(try #require(try await store.listTokens(personID: world.ann.id).first?.lastUsedAt) >= first)
        }
    }

    @Test func unknownAndMalformedSecretsSignNobodyIn() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            _ = try await store.issueToken(personID: world.ann.id, label: "")
            for secret in [TokenSecret.generate(), "", "tw_short", "Bearer x", "' OR 1=1 --", String(repeating: "a", count: 10_000)] {
                #expect(try await store.authenticate(secret: secret) == nil)
            }
        }
    }

    @Test func onlyAHashOfTheSecretIsStored() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let (_, secret) = try await store.issueToken(personID: world.bo.id, label: "")
            let dump = try await store.rows("SELECT row_to_json(a)::text FROM access_tokens a").map { try $0.decode(String.self) }
            #expect(dump.count == 1)
            #expect(!dump[0].contains(secret) && !dump[0].contains(String(secret.dropFirst(3))))
        }
    }

    @Test func secretsAreDistinctAndWellFormed() {
        let secrets = Set((0..<1_000).map { _ in TokenSecret.generate() })
        #expect(secrets.count == 1_000)
        #expect(secrets.allSatisfy(TokenSecret.isWellFormed))
    }
}
