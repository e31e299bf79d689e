/// How every retry loop of Teamwork waits between attempts: 0.1 s, doubling up
/// to 5 s by default, back to the start after a success. ``wait()`` throws
/// `CancellationError` when the task is cancelled, so a loop built on it stops
/// at once instead of retrying a cancellation as if it were a network error.
public struct Backoff: Sendable {
    public var initial: Duration
    public var maximum: Duration
    /// The wait before the next attempt.
    public private(set) var delay: Duration

    public init(initial: Duration = .milliseconds(100), maximum: Duration = .seconds(5)) {
        self.initial = initial
        self.maximum = maximum
        delay = initial
    }

    /// Waits the current delay, then doubles it (up to the maximum).
    public mutating func wait() async throws {
        try await Task.sleep(for: next())
    }

    /// The current delay, for a caller that waits in its own way; the next one doubles.
    public mutating func next() -> Duration {
        defer { delay = min(delay * 2, maximum) }
        return delay
    }

    /// After a success: the next failure waits the initial delay again.
    public mutating func reset() {
        delay = initial
    }
}
