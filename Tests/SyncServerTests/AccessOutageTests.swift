import Foundation
import Logging
import ServerSupport
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore
@testable import SyncServer

/// What the endpoint remembers of a device's token is what lets it keep working while the master
/// is away: these tests stop the master at the moments that make remembering hard.
@Suite("Sync endpoint: remembered access through an outage")
struct AccessOutageTests {
    /// A phone's first request asks the master while a change of someone else's access is heard:
    /// the master's answer may be older than the change, so it is not used from memory, but the load
    /// that follows the change vouches for the phone again, and when the master then goes away the
    /// phone is still let in. Seen failing before (a CI run): the answer was dropped, the load kept
    /// only what was already known, and the phone got 503 through the outage.
    @Test func aTokenLookedUpWhileAChangeOfAccessIsHeardIsStillKnownWhenTheMasterGoesAway() async throws {
        try await PrivateCluster.with("lookup-race") { own in
            let url = own.url
            let fixtures = try await CentralStore.withStore(url) { store in
                try await Migrator().migrate(store)
                return try await Fixtures.seed(store)
            }
            let logger = Logger(label: "test")
            let shared = SharedStore(endpoint: url, maximum: 1, logger: logger)
            let pooling = Task { try await shared.run() }
            defer { pooling.cancel() }
            let cache = AccessCache(url: url, logger: logger)
            let listening = Task { try await cache.run() }
            defer { listening.cancel() }
            try #require(try await eventually(within: .seconds(10)) { cache.isLoaded }, "the cache loads every live token")
            // Issued after the load (an issue does not notify): its first request asks the master.
            let secret = try await CentralStore.withStore(url) {
                try await $0.issueToken(personID: fixtures.ann.id, label: "new phone").secret
            }

            // A transaction holds the memberships' table until told: the phone's lookup reads its
            // teams there, and so does the load of every live token, so both wait on it.
            let (locked, lockedNow) = AsyncStream.makeStream(of: Void.self)
            let (released, release) = AsyncStream.makeStream(of: Void.self)
            let leaving = Task {
                try await CentralStore.withStore(url) { store in
                    try await store.transaction { connection in
                        try await connection.query("LOCK TABLE team_memberships IN ACCESS EXCLUSIVE MODE", logger: logger)
                        lockedNow.yield()
                        for await _ in released { break }
                    }
                }
            }
            for await _ in locked { break }
            let loadsBefore = cache.loads
            let asking = Task { try await cache.access(secret: secret, store: shared, from: "192.0.2.7") }
            try #require(
                try await eventually(within: .seconds(10)) {
                    let waiting = try? await CentralStore.withStore(url) { store in
                        try await store.rows("SELECT count(*)::int FROM pg_stat_activity WHERE wait_event_type = 'Lock'")[0].decode(
                            Int.self)
                    }
                    return (waiting ?? 0) > 0
                }, "the phone's lookup waits on the memberships")
            // Meanwhile Cy is renamed: a change of access, heard while the lookup waits.
            try await CentralStore.withStore(url) { store in
                _ = try await store.rows("UPDATE people SET first_name = 'Cyd' WHERE id = \(fixtures.cy.id)")
            }
            try #require(try await eventually(within: .seconds(10)) { !cache.isLoaded }, "the change is heard")
            release.yield()
            try await leaving.value
            #expect(try await asking.value?.person.id == fixtures.ann.id, "the master knows the phone")
            try #require(
                try await eventually(within: .seconds(10)) { cache.isLoaded && cache.loads > loadsBefore },
                "the change's load is kept")

            try await own.stop()
            try #require(try await eventually(within: .seconds(10)) { !cache.isListening }, "the cache sees the master gone")
            let during = try await cache.access(secret: secret, store: shared, from: "192.0.2.7")
            #expect(during?.person.id == fixtures.ann.id, "the phone the master vouched for keeps working while it is away")
        }
    }
}
