import CentralStore
import Foundation
import Logging
import TeamDatabase
import TeamworkModel

/// Carries worker changes from the team and personal replicas to the master,
/// exactly once.
///
/// For each replica file it takes the replica's advisory lock in PostgreSQL (so
/// two instances never work on one replica at once), reads the worker changes
/// after the cursor stored in PostgreSQL, and hands them to
/// `teamwork_apply_field_changes`, which applies them, records each in the
/// ledger (whose key skips a change taken in before) and moves the cursor, in
/// one transaction. The master's own change then flows back to the replica
/// through the feed and the generator; that writes no worker changes, so the
/// listener is not woken into doing anything twice.
public final class EventListener: Sendable {
    public struct Configuration: Sendable {
        public var databaseURL: DatabaseURL
        /// The folder of replica files.
        public var directory: URL
        /// Worker changes applied per PostgreSQL transaction.
        public var batchSize: Int
        /// Continuous mode: look at every replica at least this often.
        public var sweepInterval: Duration
        /// How long to wait for a replica another process is writing before skipping it.
        public var busyTimeout: TimeInterval

        public init(
            databaseURL: DatabaseURL, directory: URL, batchSize: Int = 1_000,
            sweepInterval: Duration = .seconds(5), busyTimeout: TimeInterval = 2
        ) {
            self.databaseURL = databaseURL
            self.directory = directory
            self.batchSize = batchSize
            self.sweepInterval = sweepInterval
            self.busyTimeout = busyTimeout
        }
    }

    /// What one pass did.
    public struct PassReport: Sendable, Equatable {
        /// Replica files looked at.
        public var files = 0
        /// Changes taken into the master's ledger, applied or not.
        public var recorded = 0
        /// Of those, changes the master took as asked.
        public var applied = 0
        /// Of those, changes decided by a conflict rule.
        public var conflicts = 0
        /// Files that could not be read or whose changes the master refused, and why.
        public var skipped: [String: String] = [:]
        /// Replicas another instance was working on.
        public var busy: [String] = []

        /// Every file that could be read was taken in up to its last change.
        public var complete: Bool { skipped.isEmpty }

        public init() {}
    }

    public let configuration: Configuration
    public let logger: Logger
    public let metrics: ListenerMetrics
    let replicas: ReplicaDirectory
    /// The folder's identity: cursors and locks are the folder's own (see `ReplicaDirectory.identity()`).
    let folderIdentity: String
    let wakeups = Wakeups()
    /// Retired files read to their end: they never receive changes again.
    let drainedRetired = Locked(Set<String>())
    /// Files whose changes could not be taken in, and since when (cleared once one is read to its end).
    let stalledSince = Locked([String: Date]())

    public init(
        _ configuration: Configuration, logger: Logger = Logger(label: "teamwork.listener"),
        metrics: ListenerMetrics = ListenerMetrics()
    ) throws {
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        replicas = try ReplicaDirectory(configuration.directory)
        folderIdentity = try replicas.identity()
    }

    /// The replica files whose changes have not advanced for at least `duration`
    /// because they could not be read (a damaged or locked file): what `/health` calls degraded.
    public func stalledReplicas(for duration: TimeInterval) -> [String] {
        let now = Date()
        return stalledSince.value.filter { now.timeIntervalSince($0.value) >= duration }.keys.sorted()
    }

    /// One pass over every replica and retired file, then returns: `teamwork-service listen --once`.
    public func once() async throws -> PassReport {
        try await CentralStore.withStore(configuration.databaseURL, logger: logger) { store in
            try await pass(store)
        }
    }

    /// Looks at the replicas named in `only` (every replica and retired file
    /// when `nil`) and takes in their new worker changes. A file that cannot be
    /// read is reported and skipped; a lost database connection throws.
    public func pass(_ store: any ListenerStore, only names: Set<String>? = nil) async throws -> PassReport {
        var report = PassReport()
        let live = try replicas.replicas().filter { $0 != .common && names?.contains($0.name) != false }
        for replica in live {
            if wakeups.isStopping { return report }
            try await drain(store, replica: replica, path: replicas.path(of: replica), label: replica.name, report: &report)
        }
        guard names == nil else { return report }
        for file in try replicas.retiredFiles() {
            let source = "retired/" + file.name
            if wakeups.isStopping { return report }
            if drainedRetired.value.contains(source) { continue }
            try await drain(store, replica: file.replica, path: file.path, label: source, report: &report)
            if report.skipped[source] == nil && !report.busy.contains(file.replica.name) {
                drainedRetired.mutate { $0.insert(source) }
            }
        }
        return report
    }

    /// Takes in one file's changes under its replica's advisory lock. `label`
    /// names the file in reports and logs (`team-12`, `retired/...`); its cursor
    /// and lock are the folder's own (see `ReplicaDirectory.source(_:identity:)`).
    private func drain(
        _ store: any ListenerStore, replica: ReplicaID, path: String, label: String,
        report: inout PassReport
    ) async throws {
        let source = ReplicaDirectory.source(label, identity: folderIdentity)
        report.files += 1
        let lock = ReplicaDirectory.source(replica.name, identity: folderIdentity)
        guard try await store.tryLockReplica(lock) else {
            report.busy.append(replica.name)
            return
        }
        do {
            try await drainLocked(store, replica: replica, path: path, source: source, label: label, report: &report)
            let now = Date()
            stalledSince.mutate { stalled in
                if report.skipped[label] == nil { stalled[label] = nil } else if stalled[label] == nil { stalled[label] = now }
            }
            metrics.stalled(stalledSince.value.count)
        } catch {
            if store.isOpen { try? await store.unlockReplica(lock) }
            throw error
        }
        try await store.unlockReplica(lock)
    }

    private func drainLocked(
        _ store: any ListenerStore, replica: ReplicaID, path: String, source: String, label: String,
        report: inout PassReport
    ) async throws {
        let (limit, busyTimeout) = (configuration.batchSize, configuration.busyTimeout)
        // Off the cooperative threads: a read may wait up to busyTimeout for a push's write to end.
        @Sendable func read(after cursor: ListenerCursor) async -> Result<WorkerChangeBatch, any Error> {
            do {
                return .success(
                    try await blockingWork {
                        try ReplicaDirectory.workerChanges(at: path, after: cursor, limit: limit, busyTimeout: busyTimeout)
                    })
            } catch {
                return .failure(error)
            }
        }
        var cursor = try await store.listenerCursor(source: source)
        // The next batch is read from SQLite while PostgreSQL applies this one.
        var prefetched: Task<Result<WorkerChangeBatch, any Error>, Never>?
        while true {
            let batch: WorkerChangeBatch
            do {
                if let prefetched {
                    batch = try await prefetched.value.get()
                } else {
                    batch = try await read(after: cursor).get()
                }
                prefetched = nil
            } catch {
                let locked = ReplicaDirectory.isBusy(error)
                report.skipped[label] = locked ? "locked by another writer: \(error)" : "cannot read it: \(error)"
                metrics.error(locked ? "replica_locked" : "replica_unreadable")
                logger.error("skipping a replica file", metadata: ["source": "\(label)", "error": "\(error)"])
                return
            }
            if batch.restarted {
                logger.warning(
                    "the replica's change positions restarted; reading it from the beginning",
                    metadata: ["source": "\(label)"])
            }
            metrics.lag(replica: label, waiting: batch.waiting, oldest: batch.oldestReceivedAt)
            guard let next = batch.cursorAfter else { return }
            if batch.changes.count < batch.waiting {
                prefetched = Task { await read(after: next) }
            }
            let started = ContinuousClock.now
            let outcomes: [FieldChangeOutcome]
            do {
                outcomes = try await store.applyFieldChanges(replica: replica.name, source: source, batch.changes, cursor: next)
            } catch  where store.isOpen && !(error is QueryDeadlineExceeded) {
                metrics.error("master_refused")
                logger.error(
                    "the master refused a batch of worker changes; taking them one at a time",
                    metadata: ["source": "\(label)", "position": "\(next.position)", "error": "\(CentralStore.explain(error))"])
                outcomes = try await applyOneByOne(store, replica: replica, source: source, label: label, batch.changes)
            }
            metrics.batch(ContinuousClock.now - started)
            metrics.recorded(outcomes.map { FieldOutcomeCount(applied: $0.applied, conflict: $0.conflict) })
            report.recorded += outcomes.count
            report.applied += outcomes.filter(\.applied).count
            report.conflicts += outcomes.filter { $0.conflict != nil }.count
            for outcome in outcomes where outcome.conflict != nil {
                logger.notice(
                    "conflict",
                    metadata: [
                        "source": "\(label)", "change": "\(TerminalText.oneLine(outcome.changeID))",
                        "task": "\(outcome.taskID.map(String.init) ?? "-")",
                        "rule": "\(outcome.conflict!)", "applied": "\(outcome.applied)",
                    ])
            }
            if outcomes.count > 0 {
                logger.debug(
                    "applied worker changes",
                    metadata: [
                        "source": "\(label)", "recorded": "\(outcomes.count)", "position": "\(next.position)",
                    ])
            }
            cursor = next
            if batch.changes.count >= batch.waiting {
                metrics.lag(replica: label, waiting: 0, oldest: nil)
                return
            }
            if wakeups.isStopping { return }
        }
    }

    /// After a batch failed: each change on its own, so that only a change the
    /// master cannot take at all is set aside (an `invalid` conflict, with the
    /// reason, for managers to see) and everything around it goes through.
    private func applyOneByOne(
        _ store: any ListenerStore, replica: ReplicaID, source: String, label: String,
        _ changes: [RecordedWorkerChange]
    ) async throws -> [FieldChangeOutcome] {
        var outcomes: [FieldChangeOutcome] = []
        for change in changes {
            let cursor = ListenerCursor(position: change.position, changeID: change.changeID)
            do {
                outcomes += try await store.applyFieldChanges(replica: replica.name, source: source, [change], cursor: cursor)
            } catch  where store.isOpen && !(error is QueryDeadlineExceeded) {
                let reason = CentralStore.explain(error)
                try await store.setAsideFieldChange(replica: replica.name, source: source, change, reason: reason)
                metrics.error("change_set_aside")
                logger.error(
                    "set aside a worker change the master cannot take",
                    metadata: [
                        "source": "\(label)", "change": "\(TerminalText.oneLine(change.changeID))", "position": "\(change.position)",
                        "error": "\(reason)",
                    ])
                outcomes.append(FieldChangeOutcome(changeID: change.changeID, taskID: change.taskID, applied: false, conflict: "invalid"))
            }
        }
        return outcomes
    }
}
