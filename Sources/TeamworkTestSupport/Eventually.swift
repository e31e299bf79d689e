import Foundation
import Testing

/// Waits for an event instead of for time: polls `check` every `interval`
/// until it holds or `limit` passes, and returns whether it held. A test that
/// orders events with a fixed sleep flakes on a busy machine; this one waits
/// exactly as long as the event takes, up to a deadline.
public func eventually(
    within limit: Duration, every interval: Duration = .milliseconds(100),
    _ check: () async throws -> Bool
) async throws -> Bool {
    PoolWatch.start()
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await check() { return true }
        let asleep = ContinuousClock.now
        try await Task.sleep(for: interval)
        reportOverslept(interval, since: asleep)
    }
    return try await check()
}

/// Says on standard error when a sleep of the test process overran by more than 30 s: a run
/// once stalled for good with every thread idle and Dispatch's timer armed an hour ahead while a
/// 100 ms sleep was due (not explained; see scripts/test). A stall that ends by itself must show too.
func reportOverslept(_ interval: Duration, since asleep: ContinuousClock.Instant) {
    let slept = ContinuousClock.now - asleep
    guard slept > interval + .seconds(30) else { return }
    FileHandle.standardError.write(Data("warning: a sleep of \(interval) took \(slept): the test process's timers stalled\n".utf8))
}

/// ``eventually(within:every:_:)`` that records a test issue naming `what`
/// when it does not hold in time.
public func expectEventually(
    _ what: @autoclosure () -> String, within limit: Duration = .seconds(20),
    every interval: Duration = .milliseconds(100),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ check: () async throws -> Bool
) async throws {
    if try await !eventually(within: limit, every: interval, check) {
        Issue.record("not within \(limit): \(what())", sourceLocation: sourceLocation)
    }
}

/// Runs `body`, then `cleanup` whether `body` returned or threw: a `defer` that may await
/// (stopping a process or a cluster without holding one of the few cooperative threads).
public func withCleanup<R>(_ body: () async throws -> R, cleanup: () async -> Void) async throws -> R {
    let result: R
    do {
        result = try await body()
    } catch {
        await cleanup()
        throw error
    }
    await cleanup()
    return result
}
