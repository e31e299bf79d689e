import Foundation
import TeamworkModel

/// Pages of changes already encoded, by the state of the replica file they
/// were read from (``ReplicaWatch/Stamp``) and the request's parameters.
///
/// Every device of a team asks the same questions of the same file — the
/// first sync of the morning, "anything since N?" — and while the file has
/// not changed the answer is the same bytes: they are read from SQLite and
/// encoded once, then sent again as they are. Any commit or rebuild gives the
/// file a new stamp, so an old answer is never found again (the stamp is taken
/// before the read; if the file changed during it, that stamp does not come
/// back). Bounded in bytes; the oldest entries go first.
final class PageCache: Sendable {
    struct Key: Hashable, Sendable {
        var path: String
        var stamp: ReplicaWatch.Stamp
        var epoch: String?
        var since: Int64
        var limit: Int
    }

    typealias Answer = (body: Data, upTo: Int64, refetch: Bool)

    private struct State {
        var entries: [Key: Answer] = [:]
        var order: [Key] = []
        var bytes = 0
    }

    /// The most bytes of encoded pages kept.
    let budget: Int
    private let state = Locked(State())

    init(budget: Int = 64 << 20) {
        self.budget = budget
    }

    subscript(key: Key) -> Answer? {
        get { state.value.entries[key] }
        set {
            guard let answer = newValue, answer.body.count <= budget / 8 else { return }
            state.mutate { state in
                guard state.entries[key] == nil else { return }
                state.entries[key] = answer
                state.order.append(key)
                state.bytes += answer.body.count
                while state.bytes > budget, !state.order.isEmpty {
                    let oldest = state.order.removeFirst()
                    state.bytes -= state.entries.removeValue(forKey: oldest)?.body.count ?? 0
                }
            }
        }
    }
}
