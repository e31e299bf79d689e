import Foundation

/// Runs `body` but gives up after `limit`, or as soon as the calling task is
/// cancelled, without waiting for `body` to notice: a call stuck in a library
/// that ignores cancellation (a query on a connection the server dropped, a
/// request to a server that never answers) is abandoned, and `expired` runs so
/// the caller can close what it was using.
///
/// Throws `timeout()` when the limit passes first, `CancellationError` when
/// the caller is cancelled first, else whatever `body` returns or throws.
public func withDeadline<T: Sendable>(
    _ limit: Duration,
    timeout: @escaping @Sendable () -> any Error,
    expired: @escaping @Sendable () -> Void = {},
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let outcome = FirstOutcome<T>()
    let running = Locked<Task<Void, Never>?>(nil)
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            let work = outcome.start(continuation, recordingIn: running, body)
            Task {
                try? await Task.sleep(for: limit)
                if outcome.resume(.failure(timeout())) {
                    work.cancel()
                    expired()
                }
            }
        }
    } onCancel: {
        if outcome.resume(.failure(CancellationError())) {
            running.value?.cancel()
        }
    }
}

/// Runs `body` in a task of its own; when the caller is cancelled, cancels it
/// and waits at most `grace` for it to wind down before throwing
/// `CancellationError` and leaving it behind. For long work with no deadline
/// of its own (a full rebuild) whose calls may ignore cancellation (a query on
/// a connection PostgreSQL dropped): a shutdown is never held up by it.
public func withCancellationGrace<T: Sendable>(
    _ grace: Duration,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let outcome = FirstOutcome<T>()
    let running = Locked<Task<Void, Never>?>(nil)
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            _ = outcome.start(continuation, recordingIn: running, body)
        }
    } onCancel: {
        running.value?.cancel()
        Task {
            try? await Task.sleep(for: grace)
            outcome.resume(.failure(CancellationError()))
        }
    }
}

/// Resumes a continuation with whichever outcome comes first; later ones are dropped.
private final class FirstOutcome<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, any Error>?
    private var early: Result<T, any Error>?
    private var done = false

    /// Installs `continuation` and runs `body` in a task of its own whose outcome resumes it;
    /// the task is recorded in `running` for a cancellation handler, and cancelled at once
    /// when the caller was cancelled before it was recorded (the handler found nothing then).
    func start(
        _ continuation: CheckedContinuation<T, any Error>, recordingIn running: Locked<Task<Void, Never>?>,
        _ body: @escaping @Sendable () async throws -> T
    ) -> Task<Void, Never> {
        install(continuation)
        let work = Task {
            do { resume(.success(try await body())) } catch { resume(.failure(error)) }
        }
        running.mutate { $0 = work }
        if Task.isCancelled { work.cancel() }
        return work
    }

    func install(_ continuation: CheckedContinuation<T, any Error>) {
        lock.lock()
        if let early {
            lock.unlock()
            continuation.resume(with: early)
            return
        }
        self.continuation = continuation
        lock.unlock()
    }

    /// True when this outcome was the first.
    @discardableResult
    func resume(_ result: Result<T, any Error>) -> Bool {
        lock.lock()
        guard !done else {
            lock.unlock()
            return false
        }
        done = true
        guard let continuation else {
            early = result
            lock.unlock()
            return true
        }
        self.continuation = nil
        lock.unlock()
        continuation.resume(with: result)
        return true
    }
}
