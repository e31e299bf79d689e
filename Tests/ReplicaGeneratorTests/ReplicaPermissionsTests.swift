import CentralStore
import Foundation
import GRDB
import ReplicaGenerator
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing

/// The replicas hold every team's tasks: nobody but the service's own user may read them or hold their locks.
@Suite("Replica files: permissions")
struct ReplicaPermissionsTests {
    static func mode(_ path: String) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! Int
    }

    @Test func theFolderIsOwnerOnlyAndSoAreTheFilesAndLocksWrittenInIt() async throws {
        try await withGenerator { store, world, generator in
            let task = try await store.createTask(try world.task("red job", team: world.red, assignee: world.ann))
            try await generator.rebuildAll()
            let folder = generator.configuration.directory
            #expect(try Self.mode(folder.path) == 0o700)
            let red = folder.appending(path: ReplicaID.team(world.red.id).fileName).path
            #expect(try Self.mode(red) == 0o600)
            #expect(try Self.mode(folder.appending(path: ReplicaID.common.fileName).path) == 0o600)
            _ = try ReplicaDirectory(folder).push(
                [WorkerChange(id: "s-1", operation: .start, taskID: task.id, madeAt: Date())],
                to: .team(world.red.id), by: world.ann.id)
            #expect(try Self.mode(red + ".lock") == 0o600)
            try await generator.rebuildAll()
            #expect(try Self.mode(red) == 0o600, "a rebuilt file written over its spare too")
        }
    }
}

/// What a rebuilt file takes over of the worker changes in the file it replaces.
@Suite("Replica files: refused changes are not kept for ever")
struct RefusedChangeRetentionTests {
    static func changeIDs(_ path: String) throws -> Set<String> {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return Set(try queue.read { try String.fetchAll($0, sql: "SELECT change_id FROM worker_changes") })
    }

    @Test func aRebuildDropsRefusedChangesOlderThanThirtyDaysAndKeepsEverythingElse() async throws {
        try await withGenerator { store, world, generator in
            let task = try await store.createTask(try world.task("red job", team: world.red, assignee: world.ann))
            try await generator.rebuildAll()
            let directory = try ReplicaDirectory(generator.configuration.directory)
            let old = Date().addingTimeInterval(-40 * 86_400)
            let recent = Date().addingTimeInterval(-86_400)
            for (id, operation, taskID, at) in [
                ("old-refused", WorkerChange.Operation.start, Int64(999_999), old),
                ("recent-refused", .start, 999_999, recent),
                ("old-accepted", .start, task.id, old),
            ] {
                try directory.push(
                    [WorkerChange(id: id, operation: operation, taskID: taskID, madeAt: at)],
                    to: .team(world.red.id), by: world.ann.id, receivedAt: at)
            }
            let path = generator.path(of: .team(world.red.id))
            #expect(try Self.changeIDs(path) == ["old-refused", "recent-refused", "old-accepted"])
            try await generator.rebuildAll()
            #expect(try Self.changeIDs(path) == ["recent-refused", "old-accepted"])
        }
    }
}
