import CentralStore
import Foundation
import PostgresNIO
import TeamDatabase
import TeamworkModel

/// How far a full rebuild has come.
public struct RebuildProgress: Sendable {
    public var tasks: Int
    public var replicas: Int
    public var elapsed: Duration

    public var tasksPerSecond: Double {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return seconds > 0 ? Double(tasks) / seconds : 0
    }
}

extension ReplicaGenerator {
    /// Rebuilds every replica from one snapshot of the master, streaming tasks so
    /// memory stays flat. Each file is built aside and swapped in atomically;
    /// replicas the master no longer has are retired.
    @discardableResult
    public func rebuildAll(progress: @Sendable (RebuildProgress) -> Void = { _ in }) async throws -> RebuildProgress {
        try replicas.removeAbandonedBuilds()
        // Connections kept for catch-up would hold the files this rebuild replaces, and a
        // replaced file is reused as a spare only when nobody has it open.
        connections.closeAll()
        let clock = ContinuousClock()
        let started = clock.now
        let existing = Set(try replicas.replicas())
        let result = try await CentralStore.withStore(configuration.databaseURL, logger: logger) { store in
            try await store.withReplicationSnapshot { snapshot in
                let position = snapshot.feedPosition
                let common = try await CommonData.load(snapshot)
                // The common replica comes first: the team files copy their tasks' locations from it.
                let commonFile = try await buildCommon(snapshot, common, position: position)

                // Files are built on their own threads while this task reads rows;
                // rows are copied straight from the network buffers into SQLite.
                let builds = ParallelBuilds(
                    directory: replicas, feedPosition: position, common: common,
                    locationsFrom: commonFile.temporaryPath, threads: configuration.buildThreads,
                    publishBatch: configuration.publishBatch,
                    memoryLimit: configuration.buildMemoryLimit)
                var built: Set<ReplicaID> = []
                var current: ReplicaID?
                var pending: [RowCopier] = []
                var count = 0
                var lastReport = clock.now

                func sendPending() async throws {
                    guard !pending.isEmpty else { return }
                    try await builds.write(pending)
                    pending = []
                    pending.reserveCapacity(configuration.writeBatch)
                }
                func switchTo(_ replica: ReplicaID?) async throws {
                    try await sendPending()
                    if current != nil { try await builds.finish() }
                    current = replica
                    if let replica {
                        built.insert(replica)
                        try await builds.begin(replica)
                        if built.count == 1 { await configuration.duringRebuild() }
                    }
                }

                do {
                    try await withTaskCancellationHandler {
                        try await snapshot.forEachTaskRow { row in
                            let copier = try RowCopier(row)
                            guard let replica = ReplicaID.holding(teamID: copier.teamID, assigneeID: copier.assigneeID) else {
                                return
                            }
                            if current != replica { try await switchTo(replica) }
                            pending.append(copier)
                            if pending.count >= configuration.writeBatch { try await sendPending() }
                            count += 1
                            if clock.now - lastReport > .seconds(1) {
                                lastReport = clock.now
                                progress(RebuildProgress(tasks: count, replicas: built.count, elapsed: clock.now - started))
                            }
                        }
                        for team in common.teams where !built.contains(.team(team.id)) {
                            try await switchTo(.team(team.id))
                        }
                        try await switchTo(nil)
                        try await builds.drain()
                    } onCancel: {
                        // Left behind (a lost lease, a shutdown), a rebuild must not go on writing.
                        builds.cancel()
                    }
                    try Task.checkCancellation()
                } catch {
                    await builds.abandon()
                    commonFile.discard()
                    throw error
                }
                built.insert(.common)
                // Renames and fsyncs: off the cooperative threads, which in `run` answer requests too.
                let (replicas, stale, directory) = (self.replicas, existing.subtracting(built), configuration.directory)
                try await blockingWork {
                    try replicas.publish([commonFile])
                    for replica in stale { try replicas.retire(replica) }
                    try Checkpoint.save(position, to: directory)
                }
                return RebuildProgress(tasks: count, replicas: built.count, elapsed: clock.now - started)
            }
        }
        progress(result)
        return result
    }

    /// Builds the common replica, finished and not yet published.
    private func buildCommon(
        _ snapshot: ReplicationSnapshot, _ common: CommonData,
        position: Int64
    ) async throws -> FinishedReplica {
        let build = try replicas.startBuild(of: .common, feedPosition: position, memoryLimit: configuration.buildMemoryLimit)
        do {
            try build.write { tx in
                for person in common.people.values.sorted(by: { $0.id < $1.id }) { try tx.upsert(person) }
                for team in common.teams { try tx.upsert(team) }
                for part in common.parts { try tx.upsert(part) }
                var teamsOfPerson: [Int64: Set<Int64>] = [:]
                for (teamID, members) in common.membersByTeam {
                    for member in members { teamsOfPerson[member.id, default: []].insert(teamID) }
                }
                for (personID, teamIDs) in teamsOfPerson { try tx.replaceMemberships(personID: personID, teamIDs: teamIDs) }
            }
            var batch: [Location] = []
            try await snapshot.forEachLocation { location in
                // A person's position is for managers and that person, not for every signed-in worker.
                guard location.kind != .person else { return }
                batch.append(location)
                if batch.count >= configuration.writeBatch {
                    try build.write { tx in for location in batch { try tx.upsert(location) } }
                    batch.removeAll(keepingCapacity: true)
                }
            }
            try build.write { tx in for location in batch { try tx.upsert(location) } }
            let unfinished = UncheckedBuild(build: build)
            return try await blockingWork { try unfinished.build.finish() }
        } catch {
            build.abandon()
            throw error
        }
    }
}

/// A build handed to a Dispatch thread to finish (it is used by one thread at a time).
struct UncheckedBuild: @unchecked Sendable {
    let build: ReplicaBuild
}
