/// An async counting semaphore: at most `permits` bodies run at once, served in turn, those that
/// ask to go `ahead` before the rest.
actor Limiter {
    private var available: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private var waitingAhead: [CheckedContinuation<Void, Never>] = []

    init(permits: Int) {
        available = permits
    }

    nonisolated func withPermit<R: Sendable>(ahead: Bool = false, _ body: () async throws -> R) async throws -> R {
        await acquire(ahead: ahead)
        do {
            let result = try await body()
            await release()
            return result
        } catch {
            await release()
            throw error
        }
    }

    private func acquire(ahead: Bool) async {
        if available > 0 {
            available -= 1
            return
        }
        await withCheckedContinuation { ahead ? waitingAhead.append($0) : waiting.append($0) }
    }

    private func release() {
        if !waitingAhead.isEmpty {
            waitingAhead.removeFirst().resume()
        } else if !waiting.isEmpty {
            waiting.removeFirst().resume()
        } else {
            available += 1
        }
    }
}
