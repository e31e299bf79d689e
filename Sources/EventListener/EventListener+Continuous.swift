import CentralStore
import Foundation
import TeamDatabase
import TeamworkModel

extension EventListener {
    /// Runs until ``stop()`` or until the task is cancelled: wakes at once when
    /// a replica file is written (Linux inotify), and looks at every replica
    /// every ``Configuration/sweepInterval`` anyway. PostgreSQL down or
    /// restarting: keeps retrying with ``Backoff``, then catches up.
    /// ``stop()`` lets the batch in hand finish; cancellation ends the wait in hand.
    public func run(afterPass: @escaping @Sendable (PassReport) -> Void = { _ in }) async {
        await withTaskCancellationHandler {
            await follow(afterPass: afterPass)
        } onCancel: { [wakeups] in
            wakeups.stop()
        }
        logger.info("listener stopped")
    }

    private func follow(afterPass: @escaping @Sendable (PassReport) -> Void) async {
        // A push lets go of the replica's lock when it has stored its changes, and a rebuild may carry
        // some over; the generator's own writes (commits without the lock) hold none to take in.
        let watcher = DirectoryWatcher(
            path: configuration.directory.path, name: "teamwork-listener-watch",
            events: [.unlocked, .replaced]
        ) { [wakeups] replicas in
            // The common replica holds no worker changes.
            let names = Set(replicas.filter { $0 != .common }.map(\.name))
            if !names.isEmpty { wakeups.post(names) }
        }
        defer { watcher?.stop() }
        if watcher == nil {
            logger.info("no file watching here; relying on the sweep", metadata: ["sweep": "\(configuration.sweepInterval)"])
        }
        let sweeper = Task { [wakeups, configuration] in
            while !Task.isCancelled {
                try? await Task.sleep(for: configuration.sweepInterval)
                wakeups.postAll()
            }
        }
        defer { sweeper.cancel() }

        var iterator = wakeups.stream.makeAsyncIterator()
        wakeups.postAll()
        await Retrying().forever(
            wait: { delay in
                await wakeups.sleep(delay)
                if wakeups.isStopping { throw Retrying.Stop() }
            },
            failed: { ending, delay in
                switch ending {
                case .failed(let unreachable as Unreachable):
                    metrics.error("database_unavailable")
                    logger.warning(
                        "cannot reach the master; retrying",
                        metadata: [
                            "error": "\(CentralStore.explain(unreachable.error))", "delay": "\(delay)",
                        ])
                case .failed(let error):
                    metrics.error("database_failed")
                    logger.warning(
                        "lost the master; reconnecting",
                        metadata: [
                            "error": "\(CentralStore.explain(error))", "delay": "\(delay)",
                        ])
                case .returned:
                    break
                }
            }
        ) { progress in
            if wakeups.isStopping { throw Retrying.Stop() }
            let store: CentralStore
            do {
                store = try await CentralStore.connect(configuration.databaseURL, queryDeadline: .seconds(15), logger: logger)
            } catch {
                if wakeups.isStopping { throw Retrying.Stop() }
                throw Unreachable(error: error)
            }
            logger.info("connected to the master")
            wakeups.postAll()
            do {
                while await iterator.next() != nil {
                    let (names, all) = wakeups.take()
                    if wakeups.isStopping { break }
                    if !all && names.isEmpty { continue }
                    try await store.ping()
                    let report = try await pass(store, only: all ? nil : names)
                    progress.made()
                    afterPass(report)
                }
            } catch {
                await store.close()
                if wakeups.isStopping { throw Retrying.Stop() }
                wakeups.postAll()
                throw error
            }
            await store.close()
            throw Retrying.Stop()
        }
    }

    /// The master could not be reached at all (as opposed to lost in the middle of a pass).
    private struct Unreachable: Error {
        var error: any Error
    }

    /// Asks ``run(afterPass:)`` to finish the batch in hand and return.
    public func stop() {
        wakeups.stop()
    }

    /// Wakes the listener for these replicas (`team-12`), e.g. from the sync
    /// endpoint in the same process.
    public func wake(_ names: Set<String>) {
        wakeups.post(names)
    }
}

/// What woke the listener: names of replicas written, or "look at everything".
final class Wakeups: Sendable {
    private struct State {
        var names: Set<String> = []
        var all = false
        var stopping = false
    }

    private let state = Locked(State())
    let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    func post(_ names: Set<String>) {
        state.mutate { $0.names.formUnion(names) }
        continuation.yield()
    }

    func postAll() {
        state.mutate { $0.all = true }
        continuation.yield()
    }

    /// What was posted since the last call.
    func take() -> (names: Set<String>, all: Bool) {
        state.mutate { state in
            defer {
                state.names = []
                state.all = false
            }
            return (state.names, state.all)
        }
    }

    var isStopping: Bool { state.value.stopping }

    func stop() {
        state.mutate { $0.stopping = true }
        continuation.finish()
    }

    /// Sleeps for `duration`, or less when asked to stop or cancelled.
    func sleep(_ duration: Duration) async {
        let deadline = ContinuousClock.now + duration
        while !isStopping, ContinuousClock.now < deadline {
            do {
                try await Task.sleep(for: min(.milliseconds(100), deadline - ContinuousClock.now))
            } catch {
                return
            }
        }
    }
}
