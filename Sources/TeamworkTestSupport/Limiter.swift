/// An async counting semaphore: at most `permits` bodies run at once.
actor Limiter {
    private var available: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(permits: Int) {
        available = permits
    }

    nonisolated func withPermit<R: Sendable>(_ body: () async throws -> R) async throws -> R {
        await acquire()
        do {
            let result = try await body()
            await release()
            return result
        } catch {
            await release()
            throw error
        }
    }

    private func acquire() async {
        if available > 0 {
            available -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func release() {
        if waiting.isEmpty {
            available += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
