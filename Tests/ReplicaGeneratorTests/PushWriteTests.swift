import CentralStore
import Foundation
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing

/// How the sync endpoint writes pushes into a replica file: on connections
/// kept open between pushes, several pushes in one transaction.
@Suite("Replica files: push writes")
struct PushWriteTests {
    @Test func aConnectionKeptBetweenPushesFollowsARebuildToTheNewFile() async throws {
        try await withGenerator { store, world, generator in
            let task = try await store.createTask(try world.task(team: world.red, assignee: world.ann))
            try await generator.rebuildAll()
            let directory = try ReplicaDirectory(generator.configuration.directory)
            let connections = ReplicaConnections(directory: directory)
            let red = ReplicaID.team(world.red.id)
            func push(_ change: WorkerChange) throws -> [WorkerChangeResult] {
                let lock = try #require(try directory.tryLock(red))
                defer { lock.release() }
                return try directory.push(
                    [WorkerPush(changes: [change], personID: world.ann.id)], holding: lock,
                    connections: connections)[0].get()
            }
            #expect(try push(WorkerChange(id: "s-1", operation: .start, taskID: task.id, madeAt: Date())).map(\.status) == [.accepted])
            #expect(
                try push(WorkerChange(id: "k-1", operation: .checkin, madeAt: Date(), latitude: 1, longitude: 2))
                    .map(\.status) == [.accepted])
            #expect(connections.openedCount == 1, "the second push reuses the first one's connection")

            try await generator.rebuildAll()
            #expect(
                try push(WorkerChange(id: "c-1", operation: .complete, taskID: task.id, note: "done", madeAt: Date()))
                    .map(\.status) == [.accepted])
            #expect(connections.openedCount == 2, "a rebuild swapped the file in: a new connection to it")
            let contents = try generator.contents(red)
            #expect(contents.acceptedWorkerChanges == 3, "the completion is in the file at the replica's path, not the replaced one")
            #expect(contents.tasks.first { $0.master.id == task.id }?.status == .completed)
        }
    }

    @Test func aPushWhoseWriteFailsInAGroupIsUndoneAloneAndTheOthersAreKept() async throws {
        try await withGenerator { store, world, generator in
            let annTask = try await store.createTask(try world.task(team: world.red, assignee: world.ann))
            let boTask = try await store.createTask(try world.task(team: world.red, assignee: world.bo))
            try await generator.rebuildAll()
            let red = ReplicaID.team(world.red.id)
            let path = generator.path(of: red)
            // A write that fails inside SQLite for one change id, as a full disk or a damaged page would for a push.
            try ReplicaSQL.run(
                path,
                """
                CREATE TRIGGER poison BEFORE INSERT ON worker_changes WHEN NEW.change_id = 'poison'
                BEGIN SELECT RAISE(ABORT, 'cannot write this one'); END
                """)
            let directory = try ReplicaDirectory(generator.configuration.directory)
            let lock = try #require(try directory.tryLock(red))
            defer { lock.release() }
            let now = Date()
            let outcomes = try directory.push(
                [
                    WorkerPush(
                        changes: [WorkerChange(id: "a-1", operation: .start, taskID: annTask.id, madeAt: now)], personID: world.ann.id),
                    WorkerPush(
                        changes: [
                            WorkerChange(id: "b-1", operation: .start, taskID: boTask.id, madeAt: now),
                            WorkerChange(id: "poison", operation: .checkin, madeAt: now, latitude: 1, longitude: 2),
                        ],
                        personID: world.bo.id),
                    WorkerPush(
                        changes: [WorkerChange(id: "a-2", operation: .complete, taskID: annTask.id, note: "ok", madeAt: now)],
                        personID: world.ann.id),
                ], holding: lock, connections: ReplicaConnections(directory: directory))
            #expect(try outcomes[0].get().map(\.status) == [.accepted])
            #expect(throws: (any Error).self, "the failing push gets the error") { try outcomes[1].get() }
            #expect(try outcomes[2].get().map(\.status) == [.accepted])
            let contents = try generator.contents(red)
            #expect(contents.acceptedWorkerChanges == 2, "a-1 and a-2 are kept, none of bo's push")
            #expect(contents.tasks.first { $0.master.id == annTask.id }?.status == .completed)
            #expect(
                contents.tasks.first { $0.master.id == boTask.id }?.status == .assigned, "bo's start was undone with the rest of his push")
        }
    }
}
