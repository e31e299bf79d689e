import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// A long-running service stops promptly on SIGTERM, whatever PostgreSQL is
/// doing: a borrowed connection ends with its task, not when its query answers.
@Suite("The central store: cancellation")
struct CancellationTests {
    /// Seen failing before: a cancelled task's query went on to its end (here
    /// 30 s; with PostgreSQL shutting down, possibly never), and `run` then
    /// outlived its 10 s after SIGTERM in ServiceFailureTests.
    @Test func aCancelledTaskEndsAtOnceThoughItsQueryIsStillRunningOnTheServer() async throws {
        try await TestDatabase.withFresh { url in
            let sleeping = Task {
                try await CentralStore.withStore(url) { store in
                    _ = try await store.connection.query("SELECT pg_sleep(30)", logger: store.logger).collect()
                }
            }
            let running = try await eventually(within: .seconds(10)) {
                try await CentralStore.withStore(url) { store in
                    try await store.rows(
                        "SELECT count(*)::int FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'"
                    )
                    .first!.decode(Int.self) == 1
                }
            }
            #expect(running, "the query is running on the server")
            let cancelled = ContinuousClock.now
            sleeping.cancel()
            _ = await sleeping.result
            let took = ContinuousClock.now - cancelled
            #expect(took < .seconds(5), "ended \(took) after cancellation")
        }
    }
}
