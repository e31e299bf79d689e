import Foundation
import NIOCore
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
/// its new state is kept. Bounded in bytes, keys counted; the oldest entries go first.
///
/// Only the server's own values become keys: an epoch that is not the file's,
/// or a position past its counter, is a refetch from 0 whatever the client sent,
/// and is kept as that one page, so made-up values cannot fill memory.
final class PageCache: Sendable {
    struct Key: Hashable, Sendable {
        var path: String
        var stamp: FileVersion
        var epoch: String?
        var since: Int64
        var limit: Int
    }

    /// `body`: the encoded page and a newline, as sent (shared by every answer, never copied: a stream
    /// sends it as one of its lines, a plain answer as its body); `packed`: the same gzipped, for a
    /// plain answer to a client that takes gzip (a page of some size, when smaller); `epoch`: the
    /// file's, as the page says.
    typealias Answer = (body: ByteBuffer, packed: ByteBuffer?, upTo: Int64, refetch: Bool, more: Bool, epoch: String)

    /// What keeping one entry costs besides its page and key strings (dictionary and order slots).
    static let entryOverhead = 160

    private struct State {
        var entries: [Key: Answer] = [:]
        var order: [Key] = []
        /// The state of each file whose pages are kept (all of a file's pages are of one state).
        var states: [String: FileVersion] = [:]
        /// The epoch of each file in the state its pages are of.
        var epochs: [String: String] = [:]
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
    ///
    /// Kept thin: it runs in every pull's task, whose stack of async frames a connection keeps for
    /// its life; the bookkeeping is synchronous, and waiting for or leading a read are frames of
    /// their own, only on the stack when a request does them.
    func answer(for asked: Key, read: @Sendable () async throws -> Answer) async throws -> Answer {
        while true {
            switch step(asked) {
            case .known(let answer):
                return answer
            case .follow(let key):
                if let shared = await follow(key) { return shared }
            case .lead(let key):
                return try await lead(key, read: read)
            }
        }
    }

    private enum Step {
        case known(Answer)
        case lead(Key)
        case follow(Key)
    }

    /// Memory's answer, or whether this request reads the page (the first to ask) or waits for its reader.
    @inline(never)
    private func step(_ asked: Key) -> Step {
        state.mutate { state -> Step in
            let key = Self.canonical(asked, in: state)
            if let known = state.entries[key] {
                state.answers += 1
                return .known(known)
            }
            if state.reading[key] != nil { return .follow(key) }
            state.reading[key] = []
            state.reads += 1
            state.answers += 1
            return .lead(key)
        }
    }

    /// The page another request is reading; nil when that read failed or ended before this one queued.
    @inline(never)
    private func follow(_ key: Key) async -> Answer? {
        let shared = await withCheckedContinuation { continuation in
            let queued = state.mutate { state -> Bool in
                guard state.reading[key] != nil else { return false }
                state.reading[key]!.append(continuation)
                return true
            }
            // The read ended between the two looks: look again.
            if !queued { continuation.resume(returning: nil) }
        }
        if shared != nil { state.mutate { $0.answers += 1 } }
        return shared
    }

    /// Reads the page, keeps it, and hands it (or the failure) to the requests that waited for it.
    @inline(never)
    private func lead(_ key: Key, read: @Sendable () async throws -> Answer) async throws -> Answer {
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
            # HELP teamwork_sync_page_cache_bytes Encoded pages kept in memory, with their keys
            # TYPE teamwork_sync_page_cache_bytes gauge
            teamwork_sync_page_cache_bytes \(bytes)

            """
    }

    /// The refetch a request comes to when its epoch is not the file's (known
    /// from a page of the same state kept before); else the request as it is.
    private static func canonical(_ key: Key, in state: State) -> Key {
        guard state.states[key.path] == key.stamp, let epoch = state.epochs[key.path], key.epoch != epoch else { return key }
        return refetch(key)
    }

    private static func refetch(_ key: Key) -> Key {
        var key = key
        (key.epoch, key.since) = (nil, 0)
        return key
    }

    private static func cost(_ key: Key, _ answer: Answer) -> Int {
        answer.body.readableBytes + (answer.packed?.readableBytes ?? 0) + key.path.utf8.count + (key.epoch?.utf8.count ?? 0)
            + answer.epoch.utf8.count + entryOverhead
    }

    /// Keeps a page (one of more than an eighth of the budget is not kept), the
    /// oldest going first. The pages of a state the file has left go at once:
    /// nobody takes that state as their stamp any more. (A read of the older
    /// state that ends after one of the newer lets the newer pages go instead:
    /// they are read again, nothing worse.)
    /// A refetch is kept as the one refetch page of its state, not under the
    /// epoch or position the client made up.
    private func store(_ answer: Answer, for asked: Key, in state: inout State) {
        let key = answer.refetch ? Self.refetch(asked) : asked
        guard answer.body.readableBytes <= budget / 8, state.entries[key] == nil else { return }
        if let kept = state.states[key.path], kept != key.stamp {
            state.order.removeAll { old in
                guard old.path == key.path else { return false }
                if let gone = state.entries.removeValue(forKey: old) { state.bytes -= Self.cost(old, gone) }
                return true
            }
        }
        state.states[key.path] = key.stamp
        state.epochs[key.path] = answer.epoch
        state.entries[key] = answer
        state.order.append(key)
        state.bytes += Self.cost(key, answer)
        while state.bytes > budget, !state.order.isEmpty {
            let oldest = state.order.removeFirst()
            if let gone = state.entries.removeValue(forKey: oldest) { state.bytes -= Self.cost(oldest, gone) }
            if !state.order.contains(where: { $0.path == oldest.path }) {
                state.states[oldest.path] = nil
                state.epochs[oldest.path] = nil
            }
        }
    }

    /// Pages kept now.
    var count: Int { state.value.entries.count }
}
