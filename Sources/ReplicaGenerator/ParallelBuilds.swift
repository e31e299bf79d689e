import Foundation
import TeamDatabase
import TeamworkModel

/// The full rebuild's writers. Replica files are built on a few serial queues,
/// one file per queue at a time, while the caller goes on reading rows from
/// PostgreSQL: creating a file, filling it and closing it is most of a
/// rebuild's work, and files are independent of each other.
///
/// A file's work (begin, its rows, finish) goes to one queue, in order, so each
/// file is only ever touched by one thread; finished files are published in
/// batches on one more queue. At most `limit` pieces of work wait
/// at once, so memory stays flat however fast PostgreSQL sends rows. After the
/// first failure the rest is skipped; ``drain()`` reports it.
final class ParallelBuilds: @unchecked Sendable {
    // @unchecked: builders[i] is only touched on queues[i]; `current` only by
    // the caller, which is one task; everything shared is behind `state`.

    /// What one queue is building, and the connection it builds on.
    private final class Builder {
        var build: ReplicaBuild?
        var connection: BuildConnection?
    }

    private struct State: Sendable {
        var inFlight = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
        var finished: [FinishedReplica] = []
        var failure: (any Error)?
    }

    private let directory: ReplicaDirectory
    private let feedPosition: Int64
    private let common: CommonData
    private let queues: [DispatchQueue]
    private let builders: [Builder]
    private let limit: Int
    private let publishBatch: Int
    private let memoryLimit: Int
    private let locationsFrom: String?
    private let publisher = DispatchQueue(label: "teamwork.generator.publish")
    private let state = Locked(State())
    private var turn = -1

    /// `locationsFrom`: the path of a common replica of the same snapshot, whose
    /// locations the files' tasks point at.
    init(
        directory: ReplicaDirectory, feedPosition: Int64, common: CommonData, locationsFrom: String?, threads: Int,
        publishBatch: Int, memoryLimit: Int = ReplicaBuild.defaultMemoryLimit, limit: Int = 16
    ) {
        self.directory = directory
        self.feedPosition = feedPosition
        self.common = common
        let threads = max(1, threads)
        queues = (0..<threads).map { DispatchQueue(label: "teamwork.generator.build-\($0)") }
        builders = (0..<threads).map { _ in Builder() }
        self.limit = max(limit, threads)
        self.publishBatch = max(1, publishBatch)
        self.memoryLimit = memoryLimit
        self.locationsFrom = locationsFrom
    }

    /// Starts building `replica` on the next queue; the rows that follow go there.
    func begin(_ replica: ReplicaID) async throws {
        turn = (turn + 1) % queues.count
        let directory = directory, feedPosition = feedPosition, common = common, memoryLimit = memoryLimit
        let locations = locationsFrom
        try await submit { builder in
            if builder.connection == nil { builder.connection = try BuildConnection(locationsFrom: locations) }
            let build = try directory.startBuild(
                of: replica, feedPosition: feedPosition, memoryLimit: memoryLimit,
                on: builder.connection)
            builder.build = build
            try build.write { tx in
                let owner = common.owner(of: replica)
                try tx.setOwner(name: owner.name, slug: owner.slug)
                try tx.replaceMembers(common.members(of: replica))
            }
        }
    }

    /// Writes rows into the file begun last.
    func write(_ rows: [RowCopier]) async throws {
        try await submit { builder in
            guard let build = builder.build else { return }
            try build.write { tx in
                for row in rows { try tx.upsertTask(row.bindTask) }
            }
        }
    }

    /// Finishes the file begun last, with the locations of its tasks (copied
    /// from the common replica at `locationsFrom`). Finished files are
    /// published (made durable and swapped in) `publishBatch` at a time, on a
    /// queue of their own, so neither reading nor building waits for it.
    func finish() async throws {
        try await submit { [self] builder in
            guard let build = builder.build else { return }
            builder.build = nil
            let finished = try build.finish()
            state.mutate { $0.finished.append(finished) }
            let batch = takeFinished(atLeast: publishBatch)
            if !batch.isEmpty { publishLater(batch) }
        }
    }

    /// The files finished and not yet published, if there are at least `minimum`.
    private func takeFinished(atLeast minimum: Int = 1) -> [FinishedReplica] {
        state.mutate { state in
            guard state.finished.count >= minimum else { return [] }
            defer { state.finished.removeAll() }
            return state.finished
        }
    }

    /// Waits until `queue` has done everything given to it so far.
    private static func idle(_ queue: DispatchQueue) async {
        await withCheckedContinuation { done in queue.async { done.resume() } }
    }

    /// Stops publishing: every file finished from now on is discarded (a
    /// rebuild cancelled, or left behind, writes nothing more into the folder).
    func cancel() {
        state.mutate { if $0.failure == nil { $0.failure = CancellationError() } }
    }

    private func publishLater(_ batch: [FinishedReplica]) {
        publisher.async { [self] in
            guard state.value.failure == nil else { return batch.forEach { $0.discard() } }
            do {
                try directory.publish(batch)
            } catch {
                batch.forEach { $0.discard() }
                state.mutate { if $0.failure == nil { $0.failure = error } }
            }
        }
    }

    /// Waits until every file is built and published, then throws the first failure, if any.
    func drain() async throws {
        await closeConnections()
        let rest = takeFinished()
        if !rest.isEmpty { publishLater(rest) }
        await Self.idle(publisher)
        if let failure = state.value.failure { throw failure }
    }

    /// Removes whatever is half-built (after a failure, or when the caller gives up).
    func abandon() async {
        await closeConnections()
        await Self.idle(publisher)
        takeFinished().forEach { $0.discard() }
    }

    /// Waits until each queue has done its work, abandons what is left half-built
    /// (nothing, unless the caller gives up) and closes the queues' connections.
    private func closeConnections() async {
        for (queue, builder) in zip(queues, builders.map(UncheckedBuilder.init)) {
            await withCheckedContinuation { done in
                queue.async {
                    builder.builder.build?.abandon()
                    builder.builder.build = nil
                    builder.builder.connection?.close()
                    builder.builder.connection = nil
                    done.resume()
                }
            }
        }
    }

    private func submit(_ work: @escaping @Sendable (Builder) throws -> Void) async throws {
        if let failure = state.value.failure { throw failure }
        await acquire()
        let builder = UncheckedBuilder(builder: builders[turn])
        let state = state
        queues[turn].async { [self] in
            defer { release() }
            guard state.value.failure == nil else { return }
            do {
                try work(builder.builder)
            } catch {
                state.mutate { if $0.failure == nil { $0.failure = error } }
            }
        }
    }

    /// A builder handed to its own queue.
    private struct UncheckedBuilder: @unchecked Sendable {
        let builder: Builder
    }

    private func acquire() async {
        await withCheckedContinuation { (go: CheckedContinuation<Void, Never>) in
            let now = state.mutate { state -> Bool in
                guard state.inFlight < limit else {
                    state.waiting.append(go)
                    return false
                }
                state.inFlight += 1
                return true
            }
            if now { go.resume() }
        }
    }

    private func release() {
        let next = state.mutate { state -> CheckedContinuation<Void, Never>? in
            guard state.waiting.isEmpty else { return state.waiting.removeFirst() }
            state.inFlight -= 1
            return nil
        }
        next?.resume()
    }
}
