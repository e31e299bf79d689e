import CentralStore
import Foundation
import GRDB
import PostgresNIO
import ReplicaGenerator
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport

/// A fresh master database, a seeded world, and a generator writing into a
/// temporary folder that is removed afterwards.
func withGenerator<R: Sendable>(
    _ body: (CentralStore, Fixtures, ReplicaGenerator) async throws -> R
) async throws -> R {
    try await TestWorld.with("replicas") { world, store in
        let generator = try ReplicaGenerator(
            .init(
                databaseURL: world.url, directory: world.replicas, pageSize: 50,
                sweepInterval: .milliseconds(200)))
        return try await body(store, world.fixtures, generator)
    }
}

/// A red team's task in replicas rebuilt just now, and the path of the red team's file: where the
/// tests that damage a replica by hand (as a disk or a person might) start.
func withRebuiltRedTask<R: Sendable>(
    _ title: String, _ body: (Fixtures, ReplicaGenerator, FieldTask, String) async throws -> R
) async throws -> R {
    try await withGenerator { store, world, generator in
        let task = try await store.createTask(try world.task(title, team: world.red))
        try await generator.rebuildAll()
        return try await body(world, generator, task, generator.path(of: .team(world.red.id)))
    }
}

extension ReplicaGenerator {
    /// Where this generator writes `replica`'s file.
    func file(of replica: ReplicaID) -> URL { configuration.directory.appending(path: replica.fileName) }

    /// The path of ``file(of:)``, as SQLite opens it.
    func path(of replica: ReplicaID) -> String { file(of: replica).path }

    func contents(_ replica: ReplicaID) throws -> ReplicaContents {
        try ReplicaContents.read(path: path(of: replica))
    }

    /// Every team and personal replica file with the team or assignee of each task it holds.
    func holdings() throws -> [ReplicaID: [FieldTask]] {
        var result: [ReplicaID: [FieldTask]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: configuration.directory.path) {
            guard let replica = ReplicaID(fileName: name), replica != .common else { continue }
            result[replica] = try contents(replica).tasks.map(\.master)
        }
        return result
    }

    /// Writes to a replica as the sync endpoint will: worker-owned fields only.
    func simulateWorker(_ replica: ReplicaID, task: Int64, status: TaskStatus, note: String?, by person: Int64) throws {
        let queue = try DatabaseQueue(path: path(of: replica))
        defer { try? queue.close() }
        try queue.write { db in
            try db.execute(
                sql: "UPDATE tasks SET status = ?, completed_at = ?, completed_by = ?, completion_note = ? WHERE id = ?",
                arguments: [status.rawValue, 1_700_000_000_000, person, note, task]
            )
        }
    }
}
