/// Teamwork's one retry loop. Every part that must keep going through
/// failures (the generator and its leadership, the listener, the access
/// cache's notifications, a device's watch) and every request tried a few
/// times (the sync client) runs through here: waits follow ``Backoff``, a
/// cancellation ends the loop at once (never retried as if it were a failure),
/// each failure is reported with the wait before the next attempt, and an
/// attempt that made progress makes the next failure wait the initial delay again.
public struct Retrying: Sendable {
    public var backoff: Backoff

    public init(_ backoff: Backoff = Backoff()) {
        self.backoff = backoff
    }

    /// Handed to each attempt: ``made()`` says the attempt got a unit of work
    /// done (a pass, a sync, a ping answered), so the loop counts it as healthy.
    public final class Progress: Sendable {
        private let state: Locked<(made: Bool, passes: Int)>
        private let observer: @Sendable () -> Void

        init(observer: @escaping @Sendable () -> Void) {
            self.observer = observer
            state = Locked((false, 0))
        }

        /// Records a unit of work done; the loop's `progress` callback hears of it.
        public func made() {
            state.mutate {
                $0.made = true
                $0.passes += 1
            }
            observer()
        }

        /// Units of work done since the loop began.
        public var passes: Int { state.value.passes }

        /// Whether work was done since the last call, and forgets it.
        func takeMade() -> Bool {
            state.mutate { state in
                defer { state.made = false }
                return state.made
            }
        }
    }

    /// Thrown by an attempt (or by `wait`) to end ``forever(progress:wait:failed:_:)`` for good:
    /// a part asked to stop without its task being cancelled.
    public struct Stop: Error {
        public init() {}
    }

    /// What ended an attempt of ``forever(progress:wait:failed:_:)``.
    public enum Ending: Sendable {
        /// The attempt threw this.
        case failed(any Error)
        /// The attempt returned although it should run until cancelled.
        case returned
    }

    /// Runs `attempt` again after each failure (and after each unexpected
    /// return) until the task is cancelled or the attempt throws ``Stop``.
    /// `failed` hears how each attempt ended and how long the loop waits
    /// before the next one; `progress` hears of each unit of work an attempt
    /// reports through ``Progress/made()``. `wait` is the pause between
    /// attempts (`Task.sleep`; a part that can be asked to stop ends it early
    /// and throws ``Stop``).
    public func forever(
        progress: @escaping @Sendable () -> Void = {},
        wait: (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        failed: (Ending, Duration) -> Void,
        _ attempt: (Progress) async throws -> Void
    ) async {
        var backoff = self.backoff
        let tracker = Progress(observer: progress)
        while !Task.isCancelled {
            let ending: Ending
            do {
                try await attempt(tracker)
                ending = .returned
            } catch is Stop {
                return
            } catch {
                ending = .failed(error)
            }
            if Task.isCancelled { return }
            if tracker.takeMade() { backoff.reset() }
            failed(ending, backoff.delay)
            do { try await wait(backoff.next()) } catch { return }
        }
    }

    /// Tries `attempt` up to `attempts` times, again only after an error
    /// `retryable` accepts, and returns its first result. Throws the last error,
    /// one `retryable` refused, or `CancellationError` as soon as the task is cancelled.
    public func upTo<T>(
        _ attempts: Int, retryable: (any Error) -> Bool,
        _ attempt: (_ number: Int) async throws -> T
    ) async throws -> T {
        var backoff = self.backoff
        var number = 1
        while true {
            try Task.checkCancellation()
            do {
                return try await attempt(number)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                if number >= attempts || !retryable(error) || Task.isCancelled { throw error }
            }
            try await backoff.wait()
            number += 1
        }
    }
}
