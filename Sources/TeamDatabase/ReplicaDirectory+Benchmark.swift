import Foundation
import GRDB

/// Synthetic field work for `teamwork-bench` and the tests. Not used by the tools.
extension ReplicaDirectory {
    /// Pushes, as the sync endpoint would, a start and a completion by each
    /// assignee for up to `limit` of the open tasks assigned in `replica`.
    /// Change ids are `<prefix>-<task>-start` and `<prefix>-<task>-complete`; the
    /// note is `done <task>`. Returns how many changes were accepted.
    @discardableResult
    public func syntheticFieldWork(in replica: ReplicaID, limit: Int = .max, prefix: String = "bench",
                                   madeAt: Date = Date()) throws -> Int {
        guard let queue = try open(replica) else { return 0 }
        let assigned = try queue.read { db in
            try Row.fetchAll(db, sql: """
                SELECT id, assignee_id FROM tasks
                WHERE assignee_id IS NOT NULL AND status IN ('assigned', 'open') ORDER BY id LIMIT ?
                """, arguments: [limit]).map { (task: $0[0] as Int64, person: $0[1] as Int64) }
        }
        try queue.close()
        var accepted = 0
        for (person, tasks) in Dictionary(grouping: assigned, by: \.person).sorted(by: { $0.key < $1.key }) {
            let changes = tasks.flatMap { item in [
                WorkerChange(id: "\(prefix)-\(item.task)-start", operation: .start, taskID: item.task, madeAt: madeAt),
                WorkerChange(id: "\(prefix)-\(item.task)-complete", operation: .complete, taskID: item.task,
                             note: "done \(item.task)", madeAt: madeAt),
            ] }
            accepted += try push(changes, to: replica, by: person).filter { $0.status == .accepted }.count
        }
        return accepted
    }
}
