import CentralStore
import Foundation
import Logging
import TeamworkModel

extension ReplicaGenerator {
    /// Keeps the replicas in step until cancelled: wakes at once on a feed
    /// notification, and sweeps every ``Configuration/sweepInterval`` anyway,
    /// since notifications are lost while nobody listens. A lost database
    /// connection is retried with backoff; catching up resumes from the checkpoint.
    public func run(afterPass: @escaping @Sendable (CatchUpReport) -> Void = { _ in }) async throws {
        if try checkpoint() == nil {
            // A query of the rebuild's can wait for ever on a connection PostgreSQL dropped
            // mid-stream: at shutdown it gets a few seconds, then is left behind.
            _ = try await withCancellationGrace(.seconds(3)) { try await rebuildAll() }
        }
        let (wakeups, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        wake.yield()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                await CentralStore.listen(on: CentralStore.feedChannel, at: configuration.databaseURL, backoff: Backoff(), logger: logger) {
                    events in
                    for await event in events {
                        switch event {
                        // Listening (again): what changed meanwhile is caught up now.
                        case .listening, .notified: wake.yield()
                        case .lost(let ending, let delay): Self.log(ending, of: "listener", retryIn: delay, logger)
                        }
                    }
                }
            }
            group.addTask {
                while !Task.isCancelled {
                    try await Task.sleep(for: configuration.sweepInterval)
                    wake.yield()
                }
            }
            group.addTask {
                await withReconnects("catch-up") { progress in
                    try await CentralStore.withStore(configuration.databaseURL, queryDeadline: .seconds(15), logger: logger) { store in
                        for await _ in wakeups {
                            await configuration.beforePass()
                            try Task.checkCancellation()
                            try await store.ping()
                            let started = ContinuousClock.now
                            let report = try await catchUp(store, from: try checkpoint() ?? 0)
                            if report.entries > 0 {
                                logger.debug(
                                    "caught up",
                                    metadata: [
                                        "entries": "\(report.entries)", "replicas_written": "\(report.replicaWrites)",
                                        "feed_position": "\(report.feedPosition)", "took": "\(ContinuousClock.now - started)",
                                    ])
                            }
                            progress.made()
                            afterPass(report)
                        }
                    }
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    /// Runs `body` again after each failure (or an unexpected return), waiting
    /// as ``Retrying`` says, until the task is cancelled.
    private func withReconnects(_ name: String, _ body: (Retrying.Progress) async throws -> Void) async {
        await Retrying().forever(failed: { ending, delay in Self.log(ending, of: name, retryIn: delay, logger) }, body)
    }

    private static func log(_ ending: Retrying.Ending, of name: String, retryIn delay: Duration, _ logger: Logger) {
        switch ending {
        case .returned: logger.warning("\(name) ended; restarting it", metadata: ["delay": "\(delay)"])
        case .failed(let error): logger.warning("\(name) failed; retrying", metadata: ["error": "\(error)", "delay": "\(delay)"])
        }
    }
}
