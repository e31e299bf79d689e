import Dispatch

/// Runs blocking file work (SQLite reads and writes, waiting on a replica's
/// flock) on a Dispatch thread instead of Swift's cooperative pool, which has
/// one thread per core: a few requests waiting on a replica's lock there would
/// stall every other request, `/health` included, and in `run` the listener
/// and the generator too.
func blockingWork<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global(qos: .userInitiated).async {
            continuation.resume(with: Result { try body() })
        }
    }
}
