import Foundation
import Logging
import PostgresNIO
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// Pairing a worker's phone (sql/0034_device_pairing.sql, docs/phone.md): a one-time link that
/// is redeemed once, for its hour at most, for the person and role it was made for, by whoever
/// may issue that person a token, and never by reading or writing a row.
@Suite("Device pairing")
struct DevicePairingTests {
    @Test func aLinkIsRedeemedOnceEvenWhenTwoPhonesTryAtTheSameMoment() async throws {
        try await TestDatabase.withFresh { url in
            let (world, pairing) = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                return (world, try await store.pairDevice(personID: world.ann.id))
            }
            #expect(pairing.expiresAt.timeIntervalSinceNow > 9 * 60 && pairing.expiresAt.timeIntervalSinceNow <= 10 * 60 + 5)
            let redeemed = try await withThrowingTaskGroup(of: CentralStore.RedeemedPairing?.self) { group in
                for name in ["Ann's Pixel", "Someone else's"] {
                    group.addTask {
                        try await CentralStore.withStore(url) { try await $0.redeemPairing(code: pairing.code, deviceName: name) }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let won = redeemed.compactMap { $0 }
            #expect(won.count == 1 && won.first?.personID == world.ann.id)
            try await CentralStore.withStore(url) { store in
                // The phone's token signs Ann in, named after the phone; the code does nothing more.
                #expect(try await store.authenticate(secret: try #require(won.first).secret)?.id == world.ann.id)
                let tokens = try await store.listTokens(personID: world.ann.id)
                #expect(tokens.filter { $0.revokedAt == nil }.count == 1)
                #expect(try await store.redeemPairing(code: pairing.code, deviceName: "again") == nil)
                // Signing out with it revokes it; a second time says it was not live.
                #expect(try await store.signOutDevice(secret: try #require(won.first).secret))
                #expect(try await !store.signOutDevice(secret: try #require(won.first).secret))
                #expect(try await store.authenticate(secret: try #require(won.first).secret) == nil)
            }
        }
    }

    /// A stranger's junk sign-out (a well-formed secret that is no live token) tells no sync endpoint
    /// anything: a NOTIFY teamwork_access would make each reload every live token and check again the
    /// waits of whoever changed, for a request anyone can send. A real sign-out does notify.
    @Test func aSignOutWithASecretThatIsNoLiveTokenNotifiesNoOne() async throws {
        try await TestDatabase.withFresh { url in
            let secret = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                return try await store.issueToken(personID: world.ann.id, label: "phone").secret
            }
            let listener = try await PostgresConnection.connect(
                configuration: try url.connectionConfiguration(), id: 9, logger: Logger(label: "test"))
            defer { Task { try? await listener.close() } }
            let (ready, readyContinuation) = AsyncStream<Void>.makeStream()
            let heard = Task {
                try await listener.listen(on: CentralStore.accessChannel) { notifications in
                    readyContinuation.yield()
                    var payloads: [String] = []
                    for try await notification in notifications {
                        payloads.append(notification.payload)
                        if payloads.filter({ $0 == "marker" }).count == 2 { break }
                    }
                    return payloads
                }
            }
            for await _ in ready { break }
            try await CentralStore.withStore(url) { store in
                #expect(try await !store.signOutDevice(secret: TokenSecret.generate()))
                // Notifications come in the order their transactions committed: the marker comes after
                // anything the junk sign-out sent.
                _ = try await store.rows("SELECT pg_notify('\(unescaped: CentralStore.accessChannel)', 'marker')")
                #expect(try await store.signOutDevice(secret: secret))
                _ = try await store.rows("SELECT pg_notify('\(unescaped: CentralStore.accessChannel)', 'marker')")
            }
            let payloads = try await withDeadline(
                .seconds(10), timeout: { TeamworkError(.unavailable, "the notifications did not come within 10 s") },
                expired: { heard.cancel() }
            ) { try await heard.value }
            #expect(payloads == ["marker", "", "marker"], "nothing from the junk sign-out, one from the real one")
        }
    }

    @Test func anExpiredCancelledOrLeaversLinkAndOneWhoseRoleChangedRedeemNothing() async throws {
        try await TestDatabase.withFresh { url in
            try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                let expired = try await store.pairDevice(personID: world.ann.id, minutes: 1)
                _ = try await store.rows(
                    PostgresQuery(
                        unsafeSQL:
                            "UPDATE device_pairings SET created_at = now() - interval '5 minutes', expires_at = now() - interval '1 second' WHERE id = \(expired.id)"
                    ))
                #expect(try await store.redeemPairing(code: expired.code, deviceName: "late") == nil)

                let cancelled = try await store.pairDevice(personID: world.ann.id)
                #expect(try await store.cancelPairings(personID: world.ann.id) == 1)
                #expect(try await store.redeemPairing(code: cancelled.code, deviceName: "cancelled") == nil)

                // A link made before Bo left does not come back when he returns within its hour.
                let leaver = try await store.pairDevice(personID: world.bo.id)
                _ = try await store.deactivatePerson(id: world.bo.id)
                _ = try await store.reactivatePerson(id: world.bo.id)
                #expect(try await store.redeemPairing(code: leaver.code, deviceName: "back") == nil)

                // A worker's link made a manager meanwhile is not a manager's token.
                let promoted = try await store.pairDevice(personID: world.cy.id)
                _ = try await store.updatePerson(id: world.cy.id, PersonChanges(role: .manager))
                #expect(try await store.redeemPairing(code: promoted.code, deviceName: "promoted") == nil)

                // Bad input changes nothing.
                await #expect(throws: TeamworkError.self) { _ = try await store.pairDevice(personID: world.ann.id, minutes: 61) }
                await #expect(throws: TeamworkError.self) { _ = try await store.pairDevice(personID: 999_999) }
                let fresh = try await store.pairDevice(personID: world.ann.id)
                await #expect(throws: TeamworkError.self) {
                    _ = try await store.redeemPairing(code: fresh.code, deviceName: "line\nbreak")
                }
                #expect(try await store.redeemPairing(code: fresh.code, deviceName: "Ann's Pixel") != nil, "a refused name used nothing up")
                let tokens = try await store.listTokens()
                #expect(tokens.filter { $0.revokedAt == nil }.map(\.label) == ["Ann's Pixel"])
            }
        }
    }

    /// A manager's own SQL login pairs workers and themselves, not an admin; it cannot read the
    /// codes' hashes, write pairings, or redeem a code (the service's role does that).
    @Test func whoMayPairWhomIsTheTokenRuleAndNoRowDecidesIt() async throws {
        try await TestDatabase.withFresh { url in
            let role = "tw_mgr_" + UUID().uuidString.prefix(8).lowercased()
            let (world, admin, pairing) = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                let admin = try await store.addPerson(
                    try NewPerson(firstName: "Ada", lastName: "Admin", email: "ada@example.org", role: .admin))
                _ = try await store.rows(PostgresQuery(unsafeSQL: "CREATE ROLE \(role) LOGIN IN ROLE teamwork_manager"))
                _ = try await store.rows(PostgresQuery(unsafeSQL: "INSERT INTO actor_roles VALUES ('\(role)', \(world.manager.id))"))
                return (world, admin, try await store.pairDevice(personID: world.bo.id))
            }
            defer {
                Task {
                    try? await CentralStore.withStore(url) { store in
                        _ = try await store.rows(PostgresQuery(unsafeSQL: "DELETE FROM actor_roles"))
                        _ = try await store.rows(PostgresQuery(unsafeSQL: "DROP ROLE IF EXISTS \(role)"))
                    }
                }
            }
            var asManager = url
            asManager.username = role
            try await CentralStore.withStore(asManager, actorID: world.manager.id) { store in
                _ = try await store.pairDevice(personID: world.ann.id)
                _ = try await store.pairDevice(personID: world.manager.id)
                await #expect(throws: TeamworkError.self, "a manager cannot pair an admin's phone") {
                    _ = try await store.pairDevice(personID: admin.id)
                }
            }
            for statement in [
                "SELECT code_hash FROM device_pairings",
                "INSERT INTO device_pairings (person_id, role, code_hash, expires_at) VALUES (\(admin.id), 'admin', sha256('x'), now() + interval '5 minutes')",
                "UPDATE device_pairings SET used_at = NULL",
                "DELETE FROM device_pairings",
                "SELECT * FROM teamwork_redeem_pairing('\(pairing.code)', '\(TokenSecret.generate())', 'stolen')",
            ] {
                await #expect(throws: (any Error).self, "refused: \(statement)") {
                    try await CentralStore.withStore(asManager) { _ = try await $0.rows(PostgresQuery(unsafeSQL: statement)) }
                }
            }
        }
    }
}
