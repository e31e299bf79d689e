import CentralStore
import Foundation
import Logging
import TeamworkModel

/// What a generator process is doing for its replica folder.
public enum GeneratorRole: String, Sendable {
    /// Holds the folder's lock and keeps the replicas in step.
    case active
    /// Another instance holds the lock; this one takes over when it goes.
    case standby
}

extension ReplicaGenerator {
    /// The lock's connection stopped answering: another instance may take over, so this one stops writing.
    struct LeadershipLost: Error, CustomStringConvertible {
        var description: String { "lost the connection that holds the generator lock" }
    }

    /// Keeps the replicas in step (``run(afterPass:)``) for as long as the task
    /// runs, but only while this process is the folder's one generator: the
    /// instances that share a folder (same ``folderIdentity``) elect one through
    /// a PostgreSQL advisory lock held on a connection of its own. The others
    /// stand by and try again every `retry`; when the active one dies, its
    /// connection ends, the lock is freed, and one of them takes over within
    /// seconds. Failures (PostgreSQL away) are retried as ``Retrying`` says;
    /// cancellation ends it. `leaseChecked` hears each time the lock was seen
    /// held (active) or tried (standing by): the lease's own pass.
    public func follow(
        retry: Duration = .seconds(1), roleChanged: @escaping @Sendable (GeneratorRole) -> Void = { _ in },
        leaseChecked: @escaping @Sendable () -> Void = {},
        afterPass: @escaping @Sendable (CatchUpReport) -> Void = { _ in }
    ) async {
        await Retrying().forever(failed: { ending, delay in
            if case .failed(let error) = ending {
                logger.warning("the generator failed; restarting it", metadata: ["error": "\(error)", "delay": "\(delay)"])
            }
        }) { progress in
            // Progress is a finished pass, not a look at the lease: a generator that fails at once
            // after taking the lock (a full disk, a damaged state file) backs off like any other.
            try await whileLeading(retry: retry, roleChanged: roleChanged, leaseChecked: leaseChecked) {
                try await run { report in
                    progress.made()
                    afterPass(report)
                }
            }
        }
    }

    /// Runs `body` while this process holds the folder's generator lock, waiting
    /// for it first; `body` is cancelled if the lock's connection fails.
    func whileLeading(
        retry: Duration, roleChanged: @Sendable (GeneratorRole) -> Void,
        leaseChecked: @escaping @Sendable () -> Void = {},
        _ body: @escaping @Sendable () async throws -> Void
    ) async throws {
        let lock = try await CentralStore.connect(configuration.databaseURL, queryDeadline: .seconds(5), logger: logger)
        do {
            var waiting = false
            while try await !lock.tryLockGenerator(folderID: folderIdentity) {
                leaseChecked()
                if !waiting {
                    waiting = true
                    roleChanged(.standby)
                    logger.info("another instance generates into this folder; standing by", metadata: ["folder": "\(folderIdentity)"])
                }
                try await Task.sleep(for: retry)
            }
            leaseChecked()
            roleChanged(.active)
            logger.info("generating into this folder", metadata: ["folder": "\(folderIdentity)"])
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    while true {
                        try await Task.sleep(for: retry)
                        do {
                            try await lock.ping()
                        } catch {
                            if Task.isCancelled { throw CancellationError() }
                            throw LeadershipLost()
                        }
                        leaseChecked()
                    }
                }
                try await group.next()
                group.cancelAll()
            }
            await lock.close()
        } catch {
            await lock.close()
            throw error
        }
    }

    /// Runs `body` if no other instance is generating into this folder, holding
    /// the folder's lock meanwhile; returns `nil` without running it otherwise.
    /// For the one-off runs (`replicate --once`, `--full`).
    public func ifNoOtherGenerator<R: Sendable>(_ body: () async throws -> R) async throws -> R? {
        try await CentralStore.withStore(configuration.databaseURL, logger: logger) { lock in
            guard try await lock.tryLockGenerator(folderID: folderIdentity) else { return nil }
            return try await body()
        }
    }
}
