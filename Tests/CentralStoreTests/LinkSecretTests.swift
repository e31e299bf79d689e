import Crypto
import Foundation
import PostgresNIO
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// The MAC public links carry (issue 64): the master's HMAC-SHA-256, made of PostgreSQL's own
/// sha256(), is RFC 4231's and swift-crypto's, and a link the master makes checks with the key the
/// service reads; rotation keeps the key before checking for 31 days.
@Suite("Public links: the master's MAC")
struct LinkSecretTests {
    static func hmac(_ store: CentralStore, _ key: [UInt8], _ message: [UInt8]) async throws -> String {
        let rows = try await store.connection.query(
            "SELECT encode(teamwork_hmac_sha256(\(ByteBuffer(bytes: key)), \(ByteBuffer(bytes: message))), 'hex')",
            logger: store.logger
        ).collect()
        return try rows[0].decode(String.self)
    }

    static func secret(_ store: CentralStore, _ prefix: String) async throws -> String {
        try await store.connection.query("SELECT teamwork_link_secret(\(prefix))", logger: store.logger).collect()[0].decode(String.self)
    }

    @Test func theMastersHMACIsRFC4231sAndSwiftCryptos() async throws {
        try await TestDatabase.withFresh { url in
            try await CentralStore.withStore(url) { store in
                // RFC 4231, test cases 1, 2 and 6 (a key longer than a block).
                let case1 = try await Self.hmac(store, Array(repeating: 0x0b, count: 20), Array("Hi There".utf8))
                let case2 = try await Self.hmac(store, Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))
                let case6 = try await Self.hmac(
                    store, Array(repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))
                #expect(case1 == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
                #expect(case2 == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
                #expect(case6 == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
                var random = SplitMix(seed: 64)
                for length in [0, 1, 32, 63, 64, 65, 200] {
                    let key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
                    let message = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
                    let expected = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key))
                        .map { String(format: "%02x", $0) }.joined()
                    let made = try await Self.hmac(store, key, message)
                    #expect(made == expected, "\(length) bytes")
                }
            }
        }
    }

    /// The 32 bytes of a secret after its prefix.
    static func body(_ secret: String, prefix: String) -> [UInt8] {
        let text = secret.dropFirst(prefix.count).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        return Array(Data(base64Encoded: text + "=") ?? Data())
    }

    @Test func aLinkTheMasterMakesChecksWithItsKeyAndRotationKeepsTheOneBeforeFor31DaysAndAFeedsForItsLife() async throws {
        try await TestDatabase.withFresh { url in
            try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                let first = try await store.linkKeys()
                #expect(first.keys.count == 1 && !first.legacyAppointments && !first.legacyFeeds)
                let link = try await Self.secret(store, "twa_")
                #expect(link.hasPrefix("twa_") && link.utf8.count == 47)
                let body = Self.body(link, prefix: "twa_")
                let key = SymmetricKey(data: try #require(first.keys.first).key)
                let mac = Array(HMAC<SHA256>.authenticationCode(for: Array("twa_".utf8) + body[0..<20], using: key)).prefix(12)
                #expect(body.count == 32 && Array(mac) == Array(body[20...]))
                #expect(body[0] == UInt8(truncatingIfNeeded: first.keys[0].id))
                await #expect(throws: (any Error).self) { _ = try await Self.secret(store, "twx_") }
                // Ann's calendar feed, signed with the first key.
                let feed = try await store.issueCalendarFeed(personID: world.ann.id)
                #expect(Self.body(feed, prefix: "twcal_")[0] == UInt8(truncatingIfNeeded: first.keys[0].id))
                // Not old enough: nothing rotates. Asked to rotate now: a new key, the old one still listed.
                let early = try await store.rotateLinkKey(every: .seconds(86_400))
                let now = try await store.rotateLinkKey(every: .zero)
                #expect(!early && now)
                let second = try await store.linkKeys()
                #expect(second.keys.count == 2)
                // The key before still signs for ten minutes (every service reads the keys every five), then the new one.
                let soon = try await Self.secret(store, "twa_")
                #expect(Self.body(soon, prefix: "twa_")[0] == UInt8(truncatingIfNeeded: second.keys[0].id))
                _ = try await store.connection.query(
                    "UPDATE link_keys SET created_at = now() - interval '11 minutes' WHERE id = \(second.keys[1].id)", logger: store.logger
                ).collect()
                let later = try await Self.secret(store, "twa_")
                #expect(Self.body(later, prefix: "twa_")[0] == UInt8(truncatingIfNeeded: second.keys[1].id))
                // Retired 32 days ago, the first key still checks Ann's feed, which it signed; issued anew, it goes.
                _ = try await store.connection.query(
                    "UPDATE link_keys SET retired_at = now() - interval '32 days' WHERE retired_at IS NOT NULL", logger: store.logger
                ).collect()
                let kept = try await store.linkKeys().keys.map(\.id)
                #expect(kept == second.keys.map(\.id))
                _ = try await store.issueCalendarFeed(personID: world.ann.id)
                let left = try await store.linkKeys().keys.map(\.id)
                #expect(left == [second.keys[1].id])
            }
        }
    }
}
