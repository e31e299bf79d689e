/// How every retry loop of Teamwork waits between attempts: 0.1 s, doubling up
/// to 5 s by default, back to the start after a success. ``wait()`` throws
/// `CancellationError` when the task is cancelled, so a loop built on it stops
/// at once instead of retrying a cancellation as if it were a network error.
///
/// A loop that many clients run at once (a fleet's devices reconnecting after
/// the service restarted) uses ``Jitter/full``: each wait is a random point
/// between zero and the current limit (AWS's "full jitter"), so the clients
/// spread out over the window instead of all trying again in the same instant,
/// again and again.
public struct Backoff: Sendable {
    public enum Jitter: Sendable {
        /// The wait is the limit itself: one process alone retrying (the service's own loops).
        case none
        /// The wait is random between zero and the limit: many clients retrying at once.
        case full
    }

    public var initial: Duration
    public var maximum: Duration
    public var jitter: Jitter
    /// The limit of the next wait (the wait itself, without jitter).
    public private(set) var delay: Duration
    private var random: any RandomNumberGenerator & Sendable

    /// `random`: where the jitter's randomness comes from (the system's by default; a seeded
    /// generator in tests, so the waits are known).
    public init(
        initial: Duration = .milliseconds(100), maximum: Duration = .seconds(5), jitter: Jitter = .none,
        random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) {
        self.initial = initial
        self.maximum = maximum
        self.jitter = jitter
        self.random = random
        delay = initial
    }

    /// Waits the next delay.
    public mutating func wait() async throws {
        try await Task.sleep(for: next())
    }

    /// The next wait, for a caller that waits in its own way: the current limit (or, with full
    /// jitter, a random part of it); the limit then doubles, up to the maximum.
    public mutating func next() -> Duration {
        defer { delay = min(delay * 2, maximum) }
        switch jitter {
        case .none:
            return delay
        case .full:
            return delay * Double.random(in: 0...1, using: &random)
        }
    }

    /// After a success: the next failure waits the initial delay again.
    public mutating func reset() {
        delay = initial
    }
}
