import Dispatch

/// Runs blocking work (SQLite reads and writes, which may also wait on another
/// writer's lock; a file lock; a child process; a blocking socket) on a Dispatch thread instead of Swift's cooperative
/// pool, which has one thread per core: a few requests waiting there would
/// stall every other request, `/health` included, and in `run` the listener
/// and the generator share that pool with the endpoint.
public func blockingWork<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global(qos: .userInitiated).async {
            continuation.resume(with: Result { try body() })
        }
    }
}
