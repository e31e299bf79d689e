import Foundation
import TeamDatabase
import TeamworkModel

/// Pages of changes already encoded, by the state of the replica file they
/// were read from (its `FileVersion`) and the request's parameters.
///
/// Every device of a team asks the same questions of the same file — the
/// first sync of the morning, "anything since N?" — and while the file has
/// not changed the answer is the same bytes: they are read from SQLite and
/// encoded once, then sent again as they are. Any commit or rebuild gives the
/// file a new stamp, so an old answer is never found again (the stamp is taken
/// before the read; if the file changed during it, that stamp does not come
/// back), and the pages of a state the file has left are let go when a page of
/// its new state is kept. Bounded in bytes; the oldest entries go first.
final class PageCache: Sendable {
    struct Key: Hashable, Sendable {
        var path: String
        var stamp: FileVersion
        var epoch: String?
        var since: Int64
        var limit: Int
    }

    typealias Answer = (body: Data, upTo: Int64, refetch: Bool)

    private struct State {
        var entries: [Key: Answer] = [:]
        var order: [Key] = []
        /// The state of each file whose pages are kept (all of a file's pages are of one state).
        var states: [String: FileVersion] = [:]
        var bytes = 0
        /// Pages being read now, with the requests waiting for them.
        var reading: [Key: [CheckedContinuation<Answer?, Never>]] = [:]
        var reads = 0
        var answers = 0
    }

    /// The most bytes of encoded pages kept.
    let budget: Int
    private let state = Locked(State())

    init(budget: Int = 64 << 20) {
        self.budget = budget
    }

    /// The page for `key`: from memory, or read once by `read` however many
    /// requests ask for it at the same moment (a commit wakes every waiting
    /// device of a team at once, and each would otherwise read and encode the
    /// same page). If that read fails, each waiting request tries on its own.
    func answer(for key: Key, read: @Sendable () async throws -> Answer) async throws -> Answer {
        while true {
            enum Step { case known(Answer), lead, follow }
            let step = state.mutate { state -> Step in
                if let known = state.entries[key] {
                    state.answers += 1
                    return .known(known)
                }
                if state.reading[key] != nil { return .follow }
                state.reading[key] = []
                state.reads += 1
                state.answers += 1
                return .lead
            }
            switch step {
            case .known(let answer):
                return answer
            case .follow:
                let shared = await withCheckedContinuation { continuation in
                    let queued = state.mutate { state -> Bool in
                        guard state.reading[key] != nil else { return false }
                        state.reading[key]!.append(continuation)
                        return true
                    }
                    // The read ended between the two looks: look again.
                    if !queued { continuation.resume(returning: nil) }
                }
                if let shared {
                    state.mutate { $0.answers += 1 }
                    return shared
                }
            case .lead:
                let result: Result<Answer, any Error>
                do {
                    result = .success(try await read())
                } catch {
                    result = .failure(error)
                }
                let followers = state.mutate { state in
                    if case .success(let answer) = result { store(answer, for: key, in: &state) }
                    return state.reading.removeValue(forKey: key) ?? []
                }
                for follower in followers { follower.resume(returning: try? result.get()) }
                return try result.get()
            }
        }
    }

    /// The page-cache lines of `/metrics` (Prometheus text).
    var metrics: String {
        let (reads, answers, bytes) = state.mutate { ($0.reads, $0.answers, $0.bytes) }
        return """
            # HELP teamwork_sync_pages_answered_total Pages of changes sent in answer to pulls
            # TYPE teamwork_sync_pages_answered_total counter
            teamwork_sync_pages_answered_total \(answers)
            # HELP teamwork_sync_pages_read_total Of those, pages read from a replica file (the rest came from memory)
            # TYPE teamwork_sync_pages_read_total counter
            teamwork_sync_pages_read_total \(reads)
            # HELP teamwork_sync_page_cache_bytes Encoded pages kept in memory
            # TYPE teamwork_sync_page_cache_bytes gauge
            teamwork_sync_page_cache_bytes \(bytes)

            """
    }

    /// Keeps a page (one of more than an eighth of the budget is not kept), the
    /// oldest going first. The pages of a state the file has left go at once:
    /// nobody takes that state as their stamp any more. (A read of the older
    /// state that ends after one of the newer lets the newer pages go instead:
    /// they are read again, nothing worse.)
    private func store(_ answer: Answer, for key: Key, in state: inout State) {
        guard answer.body.count <= budget / 8, state.entries[key] == nil else { return }
        if let kept = state.states[key.path], kept != key.stamp {
            state.order.removeAll { old in
                guard old.path == key.path else { return false }
                state.bytes -= state.entries.removeValue(forKey: old)?.body.count ?? 0
                return true
            }
        }
        state.states[key.path] = key.stamp
        state.entries[key] = answer
        state.order.append(key)
        state.bytes += answer.body.count
        while state.bytes > budget, !state.order.isEmpty {
            let oldest = state.order.removeFirst()
            state.bytes -= state.entries.removeValue(forKey: oldest)?.body.count ?? 0
            if !state.order.contains(where: { $0.path == oldest.path }) { state.states[oldest.path] = nil }
        }
    }
}
