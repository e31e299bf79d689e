import EventListener
import Foundation
import GRDB
import ReplicaGenerator
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport

@testable import CentralStore

/// A master with tasks in both teams, generated replicas, and a listener over them.
///
///     red:  annTask (assigned to Ann), freeTask (free-floating)
///     blue: cyTask (assigned to Cy)
struct ListenerWorld: Sendable {
    var url: DatabaseURL
    var folder: URL
    var fixtures: Fixtures
    var annTask: Int64
    var freeTask: Int64
    var cyTask: Int64
    var generator: ReplicaGenerator
    var listener: EventListener

    var red: ReplicaID { .team(fixtures.red.id) }
    var blue: ReplicaID { .team(fixtures.blue.id) }
    var directory: ReplicaDirectory { try! ReplicaDirectory(folder) }

    static func with(_ body: @Sendable (ListenerWorld, CentralStore) async throws -> Void) async throws {
        try await TestWorld.with("listener") { base, store in
            let (url, folder, fixtures) = (base.url, base.replicas, base.fixtures)
            let work = try await base.work(store, blueAssignee: fixtures.cy)
            let generator = try ReplicaGenerator(.init(databaseURL: url, directory: folder))
            _ = try await generator.catchUp()
            let listener = try EventListener(
                .init(
                    databaseURL: url, directory: folder, batchSize: 50,
                    sweepInterval: .milliseconds(200), busyTimeout: 0.2))
            let world = ListenerWorld(
                url: url, folder: folder, fixtures: fixtures, annTask: work.annTask.id, freeTask: work.freeTask.id,
                cyTask: work.blueTask.id, generator: generator, listener: listener)
            try await body(world, store)
        }
    }

    /// Pushes changes to a replica as the sync endpoint does.
    @discardableResult
    func push(_ replica: ReplicaID, by person: Person, _ changes: WorkerChange...) throws -> [WorkerChangeResult] {
        try directory.push(changes, to: replica, by: person.id)
    }

    func path(_ replica: ReplicaID) -> String { folder.appending(path: replica.fileName).path }
}

extension WorkerChange {
    static func start(_ task: Int64, id: String = UUID().uuidString) -> WorkerChange {
        WorkerChange(id: id, operation: .start, taskID: task, madeAt: Date())
    }

    static func complete(_ task: Int64, note: String = "done", id: String = UUID().uuidString) -> WorkerChange {
        WorkerChange(id: id, operation: .complete, taskID: task, note: note, madeAt: Date())
    }

    static func claim(_ task: Int64, id: String = UUID().uuidString) -> WorkerChange {
        WorkerChange(id: id, operation: .claim, taskID: task, madeAt: Date())
    }
}

extension CentralStore {
    /// How many history entries each field change left on the master.
    func historyCountsByFieldChange() async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try await rows("SELECT field_change_id, count(*) FROM task_history WHERE field_change_id IS NOT NULL GROUP BY 1") {
            let (id, count) = try row.decode((String, Int).self)
            counts[id] = count
        }
        return counts
    }

    func ledgerCount() async throws -> Int {
        try await rows("SELECT count(*)::int FROM field_changes")[0].decode(Int.self)
    }
}
