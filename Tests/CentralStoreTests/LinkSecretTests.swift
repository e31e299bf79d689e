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

    @Test func aLinkTheMasterMakesChecksWithItsKeyAndRotationKeepsTheOneBeforeFor31Days() async throws {
        try await TestDatabase.withFresh { url in
            try await CentralStore.withStore(url) { store in
                let first = try await store.linkKeys()
                #expect(first.keys.count == 1 && !first.legacyAppointments && !first.legacyFeeds)
                let link = try await Self.secret(store, "twa_")
                #expect(link.hasPrefix("twa_") && link.utf8.count == 47)
                let body = Array(
                    Data(
                        base64Encoded: link.dropFirst(4).replacingOccurrences(of: "-", with: "+")
                            .replacingOccurrences(of: "_", with: "/") + "=")!)
                let key = SymmetricKey(data: try #require(first.keys.first).key)
                let mac = Array(HMAC<SHA256>.authenticationCode(for: Array("twa_".utf8) + body[0..<20], using: key)).prefix(12)
                #expect(Array(mac) == Array(body[20...]))
                #expect(body[0] == UInt8(truncatingIfNeeded: first.keys[0].id))
                await #expect(throws: (any Error).self) { _ = try await Self.secret(store, "twx_") }
                // Not old enough: nothing rotates. Asked to rotate now: a new key, the old one still listed.
                let early = try await store.rotateLinkKey(every: .seconds(86_400))
                let now = try await store.rotateLinkKey(every: .zero)
                #expect(!early && now)
                let second = try await store.linkKeys()
                #expect(second.keys.count == 2)
                let newer = try await Self.secret(store, "twcal_")
                let newerBody = Array(
                    Data(
                        base64Encoded: newer.dropFirst(6).replacingOccurrences(of: "-", with: "+")
                            .replacingOccurrences(of: "_", with: "/") + "=")!)
                #expect(newerBody[0] == UInt8(truncatingIfNeeded: second.keys[1].id))
                // A retired key stops checking 31 days after it was retired.
                _ = try await store.connection.query(
                    "UPDATE link_keys SET retired_at = now() - interval '32 days' WHERE retired_at IS NOT NULL", logger: store.logger
                ).collect()
                let left = try await store.linkKeys().keys.map(\.id)
                #expect(left == [second.keys[1].id])
            }
        }
    }
}
