import Foundation
import Logging
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// A surface's pool of master connections (docs/security.md, "Master connections"): never more
/// than its maximum open, a burst served in turn, a wait with a deadline, a broken or cancelled
/// connection replaced.
@Suite("The central store: a surface's pool of connections")
struct StorePoolTests {
    /// Runs `body` with a pool of `maximum` on a fresh database, the pool running beside it.
    static func withPool(
        maximum: Int, leaseDeadline: Duration = .seconds(10), _ body: (StorePool, DatabaseURL) async throws -> Void
    ) async throws {
        try await TestDatabase.withFresh { url in
            let pool = StorePool(url, name: "test pool", maximum: maximum, leaseDeadline: leaseDeadline, logger: Logger(label: "test"))
            let running = Task { try await pool.run() }
            defer { running.cancel() }
            try await body(pool, url)
        }
    }

    /// The backends connected to `url`'s database, this query's own left out.
    static func backends(_ url: DatabaseURL) async throws -> Int {
        try await CentralStore.withStore(url) { store in
            try await store.rows(
                "SELECT count(*)::int FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")[0]
                .decode(Int.self)
        }
    }

    @Test func thirtyCallsAtOnceAreServedInTurnOnAtMostThePoolsThreeConnections() async throws {
        try await Self.withPool(maximum: 3) { pool, url in
            let inside = Locked((now: 0, most: 0))
            let pids = try await withThrowingTaskGroup(of: Int32.self) { group in
                for _ in 0..<30 {
                    group.addTask {
                        try await pool.withStore { store in
                            inside.mutate {
                                $0.now += 1
                                $0.most = max($0.most, $0.now)
                            }
                            defer { inside.mutate { $0.now -= 1 } }
                            return try await store.rows("SELECT pg_backend_pid(), pg_sleep(0.05)")[0].decode(Int32.self)
                        }
                    }
                }
                return try await group.reduce(into: Set<Int32>()) { $0.insert($1) }
            }
            #expect(inside.value.most <= 3, "at most three bodies at once: \(inside.value.most)")
            #expect((1...3).contains(pids.count), "the calls shared at most three backends: \(pids.count)")
            #expect(try await Self.backends(url) <= 3, "no more than the pool's three are open")
        }
    }

    /// The pool's connections cannot be made: a call does not wait out its deadline while the pool
    /// retries (vapor/postgres-nio#565) but fails as soon as the pool's attempt fails, with the
    /// reason, and so does the next, at once.
    @Test func aCallFailsAsSoonAsThePoolCannotConnectAndSaysWhy() async throws {
        let nowhere = try DatabaseURL(parsing: "postgres://nobody@/nothing?host=/nonexistent-\(UUID().uuidString)")
        // A deadline far beyond what the failure takes even on a loaded machine (a full parallel run took 15 s
        // to start the pool's task): the reason in the error, not a stopwatch, says it did not wait the deadline out.
        let pool = StorePool(nowhere, name: "board's reads", maximum: 1, leaseDeadline: .seconds(300), logger: Logger(label: "test"))
        let running = Task { try await pool.run() }
        defer { running.cancel() }
        for attempt in 1...2 {
            let started = ContinuousClock.now
            let error = await #expect(throws: TeamworkError.self) { try await pool.withStore { _ in 1 } }
            #expect(ContinuousClock.now - started < .seconds(150), "attempt \(attempt) did not wait out the 300 s deadline")
            #expect(error?.code == .unavailable)
            #expect(
                error?.message.contains("no PostgreSQL socket there") == true, "attempt \(attempt): \(String(describing: error))")
        }
    }

    @Test func aCallWaitingForAFullPoolGivesUpAtItsDeadlineAndTheHolderIsUnharmed() async throws {
        try await Self.withPool(maximum: 1, leaseDeadline: .milliseconds(500)) { pool, _ in
            // The holder's own answer is checked as it lets go.
            try await Self.holding(pool) {
                await #expect(throws: TeamworkError.self) { try await pool.withStore { _ in 1 } }
            }
            #expect(try await pool.withStore { try await $0.rows("SELECT 8")[0].decode(Int.self) } == 8, "the next call is served")
        }
    }

    @Test func aConnectionClosedUnderItsBodyIsReplacedForTheNextCall() async throws {
        try await Self.withPool(maximum: 1) { pool, _ in
            let first = try await pool.withStore { store -> Int32 in
                let pid = try await store.rows("SELECT pg_backend_pid()")[0].decode(Int32.self)
                await store.close()
                return pid
            }
            let second = try await pool.withStore { try await $0.rows("SELECT pg_backend_pid()")[0].decode(Int32.self) }
            #expect(first != second, "a new connection in the closed one's place")
        }
    }

    /// A body stuck in a query when its task is cancelled ends within the grace, and the pool
    /// serves the next call on a connection that is not stuck.
    @Test func aCancelledCallStuckInAQueryEndsAndThePoolGoesOn() async throws {
        try await Self.withPool(maximum: 1) { pool, url in
            let sleeping = Task {
                try await pool.withStore { store in
                    _ = try await store.connection.query("SELECT pg_sleep(30)", logger: store.logger).collect()
                }
            }
            let running = try await eventually(within: .seconds(10)) {
                try await CentralStore.withStore(url) { store in
                    try await store.rows(
                        "SELECT count(*)::int FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'"
                    )[0].decode(Int.self) == 1
                }
            }
            try #require(running, "the query is running on the server")
            let cancelled = ContinuousClock.now
            sleeping.cancel()
            _ = await sleeping.result
            #expect(ContinuousClock.now - cancelled < .seconds(8), "ended within the grace")
            #expect(try await pool.withStore { try await $0.rows("SELECT 9")[0].decode(Int.self) } == 9)
        }
    }

    @Test func theActingPersonIsSetForEachCallsTransactionAndNotLeftForTheNext() async throws {
        try await Self.withPool(maximum: 1) { pool, _ in
            let acting = try await pool.withStore(actorID: 42) { store in
                try await store.transaction { connection in
                    try await connection.query("SELECT current_setting('teamwork.actor_id', true)", logger: store.logger)
                        .collect()[0].decode(String?.self)
                }
            }
            #expect(acting == "42")
            let after = try await pool.withStore { store in
                try await store.rows("SELECT coalesce(current_setting('teamwork.actor_id', true), '')")[0].decode(String.self)
            }
            #expect(after == "", "a setting local to the transaction does not go back to the pool")
        }
    }

    /// The master goes away and comes back: calls meanwhile fail at once, and once it is back the
    /// pool serves again without a restart (the failing ends with the first lease that comes).
    @Test func aPoolServesAgainOnceTheMasterIsBack() async throws {
        try await PrivateCluster.with("pool-back") { own in
            let pool = StorePool(own.url, name: "test pool", maximum: 2, leaseDeadline: .seconds(20), logger: Logger(label: "test"))
            let running = Task { try await pool.run() }
            defer { running.cancel() }
            #expect(try await pool.withStore { try await $0.rows("SELECT 1")[0].decode(Int.self) } == 1)
            _ = try await own.stop()
            let away = await #expect(throws: TeamworkError.self) {
                try await pool.withStore { try await $0.rows("SELECT 2")[0].decode(Int.self) }
            }
            #expect(away?.code == .unavailable, "\(String(describing: away))")
            _ = try await own.start()
            let back = try await eventually(within: .seconds(90)) {
                (try? await pool.withStore { try await $0.rows("SELECT 3")[0].decode(Int.self) }) == 3
            }
            #expect(back, "the pool serves again once the master is back")
        }
    }

    /// Runs `body` with a pool of 2 for a role that may hold one connection (the role's CONNECTION
    /// LIMIT refuses the pool's second), on a fresh database.
    static func withLimitedPool(leaseDeadline: Duration = .seconds(30), _ body: (StorePool) async throws -> Void) async throws {
        try await TestDatabase.withFresh { url in
            let role = "tw_pool_" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
            try await CentralStore.withStore(url) { store in
                _ = try await store.rows("CREATE ROLE \(unescaped: role) LOGIN CONNECTION LIMIT 1")
            }
            var limited = url
            limited.username = role
            let pool = StorePool(limited, name: "test pool", maximum: 2, leaseDeadline: leaseDeadline, logger: Logger(label: "test"))
            let running = Task { try await pool.run() }
            do {
                try await body(pool)
            } catch {
                running.cancel()
                throw error
            }
            running.cancel()
            _ = await running.result
            // The throwaway cluster's roles outlive its databases.
            try? await CentralStore.withStore(url) { _ = try await $0.rows("DROP ROLE \(unescaped: role)") }
        }
    }

    /// Holds the pool's one connection while `meanwhile` runs, given back when it returns.
    static func holding(_ pool: StorePool, meanwhile: () async throws -> Void) async throws {
        let (held, holding) = AsyncStream.makeStream(of: Void.self)
        let (release, releasing) = AsyncStream.makeStream(of: Void.self)
        let holder = Task {
            try await pool.withStore { store -> Int in
                holding.yield()
                for await _ in release { break }
                return try await store.rows("SELECT 1")[0].decode(Int.self)
            }
        }
        for await _ in held { break }
        do {
            try await meanwhile()
        } catch {
            releasing.yield()
            _ = await holder.result
            throw error
        }
        releasing.yield()
        #expect(try await holder.value == 1)
    }

    /// A second connection refused (the role's CONNECTION LIMIT) while the first works is no outage:
    /// the call waits for the working connection instead of failing with the refusal.
    @Test func aRefusedSecondConnectionWhileOneWorksMakesCallsWaitNotFail() async throws {
        try await Self.withLimitedPool { pool in
            var second: Task<Int, any Error>?
            try await Self.holding(pool) {
                // The pool tries a second connection for this call, and the role's limit refuses it; the holder
                // lets go only once the refusal is heard, so the call meets it while a connection works.
                second = Task { try await pool.withStore { try await $0.rows("SELECT 2")[0].decode(Int.self) } }
                let refused = try await eventually(within: .seconds(30)) { pool.health.value.refused != nil }
                try #require(refused, "the second connection was refused")
            }
            #expect(try await second?.value == 2, "the waiting call was served on the one connection the role may hold")
        }
    }

    /// The moment between one body giving its connection back and the next caller getting it is no
    /// outage either (a full run once failed the test above there): with the refusal still the pool's
    /// last word and the working connection resting in the pool, a call takes that connection within
    /// its deadline (postgres-nio hands a resting connection on only after its next check).
    @Test func aConnectionRestingInThePoolServesTheNextCallThoughASecondWasRefused() async throws {
        try await Self.withLimitedPool(leaseDeadline: .seconds(10)) { pool in
            try await Self.holding(pool) {
                let second = Task { try await pool.withStore { try await $0.rows("SELECT 2")[0].decode(Int.self) } }
                let refused = try await eventually(within: .seconds(30)) { pool.health.value.refused != nil }
                try #require(refused, "the second connection was refused")
                second.cancel()
                _ = await second.result
            }
            #expect(pool.health.value.outage == nil, "a refusal for too many connections is the master answering, not an outage")
            #expect(try await pool.withStore { try await $0.rows("SELECT 3")[0].decode(Int.self) } == 3)
        }
    }
}
