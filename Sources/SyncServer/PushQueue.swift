import Foundation
import TeamDatabase
import TeamworkModel

/// Pushes to one replica take their turn here, and those that arrive while a
/// write is under way are written together next, in one transaction (group
/// commit): one commit and its syncs for all of them instead of one each, and
/// no push holds a thread or polls a lock while it waits behind another push
/// of this server. Each push keeps its own results; a push whose write fails is
/// undone alone (a savepoint each, see ``ReplicaDirectory/push(_:holding:receivedAt:connections:)``).
///
/// The replica's flock is still taken for each group, with the push lock
/// timeout: it is what orders this server's writes against the generator, the
/// listener and other processes. Every push in a group gets ``ReplicaBusy``
/// when it cannot be had in time.
final class PushQueue: Sendable {
    private struct Waiting: Sendable {
        var push: WorkerPush
        var continuation: CheckedContinuation<[WorkerChangeResult], any Error>
    }

    private struct State: Sendable {
        /// Pushes not yet taken into a write, per replica being written.
        var waiting: [ReplicaID: [Waiting]] = [:]
        /// Transactions written, and the pushes they held (a group refused the lock counts in neither).
        var groups = 0
        var grouped = 0
    }

    let directory: ReplicaDirectory
    let connections: ReplicaConnections
    let lockTimeout: Duration?
    /// The most changes written in one transaction (a group takes at least one push, whatever its size).
    let maximumChanges: Int
    private let state = Locked(State())

    init(directory: ReplicaDirectory, connections: ReplicaConnections, lockTimeout: Duration?, maximumChanges: Int = 2_000) {
        self.directory = directory
        self.connections = connections
        self.lockTimeout = lockTimeout
        self.maximumChanges = maximumChanges
    }

    /// Writes one worker's changes to `replica` and says what became of each.
    func push(_ changes: [WorkerChange], to replica: ReplicaID, by personID: Int64) async throws -> [WorkerChangeResult] {
        try await withCheckedThrowingContinuation { continuation in
            let leads = state.mutate { state -> Bool in
                let writing = state.waiting[replica] != nil
                state.waiting[replica, default: []].append(
                    Waiting(
                        push: WorkerPush(changes: changes, personID: personID),
                        continuation: continuation))
                return !writing
            }
            // The first push to find the replica idle starts its writer; the writer
            // ends when it finds nothing more waiting. It is not the request's task:
            // a device that hangs up does not stop a write that holds others' changes.
            if leads { Task { await self.write(replica) } }
        }
    }

    /// Writes groups of waiting pushes until none is left. Each group is taken
    /// once the lock is held, so pushes that arrived during the wait join it;
    /// when the lock cannot be had in time, all of them are told so.
    private func write(_ replica: ReplicaID) async {
        while hasWaiting(replica) {
            let lock: ReplicaLock
            do {
                lock = try await ReplicaPushes.lock(replica, in: directory, within: lockTimeout)
            } catch {
                for waiting in takeGroup(replica, all: true) { waiting.continuation.resume(throwing: error) }
                continue
            }
            defer { lock.release() }
            let group = takeGroup(replica)
            let (directory, connections, pushes) = (self.directory, self.connections, group.map(\.push))
            do {
                let outcomes = try await blockingWork { try directory.push(pushes, holding: lock, connections: connections) }
                state.mutate { state in
                    state.groups += 1
                    state.grouped += group.count
                }
                for (waiting, outcome) in zip(group, outcomes) { waiting.continuation.resume(with: outcome) }
            } catch {
                for waiting in group { waiting.continuation.resume(throwing: error) }
            }
        }
    }

    /// Whether pushes wait for `replica`; when none does, its writer ends (and the next push starts one).
    private func hasWaiting(_ replica: ReplicaID) -> Bool {
        state.mutate { state in
            guard let queue = state.waiting[replica], !queue.isEmpty else {
                state.waiting[replica] = nil
                return false
            }
            return true
        }
    }

    /// Takes the next group off the replica's queue: pushes in arrival order up
    /// to ``maximumChanges`` (at least one), or with `all` every waiting push.
    private func takeGroup(_ replica: ReplicaID, all: Bool = false) -> [Waiting] {
        state.mutate { state in
            let queue = state.waiting[replica] ?? []
            var (taken, changes) = (0, 0)
            while taken < queue.count, all || taken == 0 || changes + queue[taken].push.changes.count <= maximumChanges {
                changes += queue[taken].push.changes.count
                taken += 1
            }
            // An empty list (not nil) marks the writer as still running.
            state.waiting[replica] = Array(queue[taken...])
            return Array(queue[..<taken])
        }
    }

    /// The push lines of `/metrics` (Prometheus text).
    var metrics: String {
        let (waiting, groups, grouped) = state.mutate { state in
            (state.waiting.values.reduce(0) { $0 + $1.count }, state.groups, state.grouped)
        }
        return """
            # HELP teamwork_sync_pushes_waiting Pushes waiting for their replica's write
            # TYPE teamwork_sync_pushes_waiting gauge
            teamwork_sync_pushes_waiting \(waiting)
            # HELP teamwork_sync_push_writes_total Replica transactions written for pushes (one per group)
            # TYPE teamwork_sync_push_writes_total counter
            teamwork_sync_push_writes_total \(groups)
            # HELP teamwork_sync_pushes_written_total Pushes taken into those transactions
            # TYPE teamwork_sync_pushes_written_total counter
            teamwork_sync_pushes_written_total \(grouped)

            """
    }
}
