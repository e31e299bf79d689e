import Foundation

/// Waits for an event instead of for time: polls `check` every `interval`
/// until it holds or `limit` passes, and returns whether it held. A test that
/// orders events with a fixed sleep flakes on a busy machine; this one waits
/// exactly as long as the event takes, up to a deadline.
public func eventually(within limit: Duration, every interval: Duration = .milliseconds(100),
                       _ check: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await check() { return true }
        try await Task.sleep(for: interval)
    }
    return try await check()
}
