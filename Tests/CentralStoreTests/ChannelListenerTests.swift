import Foundation
import Logging
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// The one way a part of Teamwork listens on the master: listening, each notification, and a
/// lost connection followed by listening again, in that order, until the listener stops.
@Suite("Listening on a channel")
struct ChannelListenerTests {
    @Test func aListenerHearsNotificationsAndListensAgainAfterItsConnectionIsKilled() async throws {
        try await TestDatabase.withFresh { url in
            let seen = Locked<[String]>([])
            let listening = Task {
                await CentralStore.listen(
                    on: "tw_test_channel", at: url, backoff: Backoff(initial: .milliseconds(50), maximum: .seconds(1)),
                    logger: Logger(label: "test")
                ) { events in
                    for await event in events {
                        switch event {
                        case .listening: seen.mutate { $0.append("listening") }
                        case .notified: seen.mutate { $0.append("notified") }
                        case .lost: seen.mutate { $0.append("lost") }
                        }
                    }
                }
            }
            defer { listening.cancel() }
            try await expectEventually("listening", within: .seconds(10)) { seen.value == ["listening"] }
            try await CentralStore.withStore(url) { _ = try await $0.rows("SELECT pg_notify('tw_test_channel', '')") }
            try await expectEventually("notified", within: .seconds(10)) { seen.value == ["listening", "notified"] }
            // The listening backend is killed, as a failover or an operator would.
            try await CentralStore.withStore(url) { store in
                _ = try await store.rows(
                    """
                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE query LIKE 'LISTEN%tw_test_channel%' AND pid <> pg_backend_pid()
                    """)
            }
            try await expectEventually("lost, then listening again", within: .seconds(10)) {
                seen.value == ["listening", "notified", "lost", "listening"]
            }
            try await CentralStore.withStore(url) { _ = try await $0.rows("SELECT pg_notify('tw_test_channel', '')") }
            try await expectEventually("notified again", within: .seconds(10)) { seen.value.last == "notified" }
            let pid = try await CentralStore.withStore(url) { store in
                try await store.rows(
                    "SELECT pid FROM pg_stat_activity WHERE query LIKE 'LISTEN%tw_test_channel%' AND pid <> pg_backend_pid()"
                )
                .first?.decode(Int32.self)
            }
            #expect(pid != nil, "the listening backend is found")
            listening.cancel()
            await listening.value
            // Stopped: its connection is gone (its backend ends a moment after the client closes).
            try await expectEventually("the listening backend ended", within: .seconds(10)) {
                try await CentralStore.withStore(url) { store in
                    try await store.rows("SELECT count(*)::int FROM pg_stat_activity WHERE pid = \(pid ?? -1)")[0].decode(Int.self)
                } == 0
            }
        }
    }
}
