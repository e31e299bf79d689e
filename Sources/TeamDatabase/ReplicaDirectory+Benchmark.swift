import Foundation
import GRDB

/// Synthetic field work for `teamwork-bench` and the tests. Not used by the tools.
extension ReplicaDirectory {
    /// Pushes, as the sync endpoint would, a start and a completion by each
    /// assignee for up to `limit` of the open tasks assigned in `replica`.
    /// Change ids are `<prefix>-<task>-start` and `<prefix>-<task>-complete`; the
    /// note is `done <task>`. Returns how many changes were accepted.
    @discardableResult
    @_spi(Benchmark) public func syntheticFieldWork(
        in replica: ReplicaID, limit: Int = .max, prefix: String = "bench",
        madeAt: Date = Date()
    ) throws -> Int {
        guard let queue = try open(replica) else { return 0 }
        let assigned = try queue.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT id, assignee_id FROM tasks
                    WHERE assignee_id IS NOT NULL AND status IN ('assigned', 'open') ORDER BY id LIMIT ?
                    """, arguments: [limit]
            ).map { (task: $0["id"] as Int64, person: $0["assignee_id"] as Int64) }
        }
        try queue.close()
        let work = Dictionary(grouping: assigned, by: \.person).mapValues { tasks in
            tasks.flatMap { item in
                [
                    WorkerChange(id: "\(prefix)-\(item.task)-start", operation: .start, taskID: item.task, madeAt: madeAt),
                    WorkerChange(
                        id: "\(prefix)-\(item.task)-complete", operation: .complete, taskID: item.task,
                        note: "done \(item.task)", madeAt: madeAt),
                ]
            }
        }
        return try pushEach(work, to: replica).accepted
    }

    /// Pushes each person's changes, in person order; how many were written and accepted.
    private func pushEach(_ work: [Int64: [WorkerChange]], to replica: ReplicaID) throws -> (written: Int, accepted: Int) {
        var written = 0, accepted = 0
        for (person, changes) in work.sorted(by: { $0.key < $1.key }) {
            let results = try push(changes, to: replica, by: person)
            written += results.count
            accepted += results.filter { $0.status == .accepted }.count
        }
        return (written, accepted)
    }

    /// Pushes, as the sync endpoint would, a claim, a start and a completion of
    /// up to `limit` free-floating tasks of a team replica, shared out among its
    /// members in turn; with `workersPerTask` 2, the next member does the same
    /// work on each task too (and the endpoint refuses what comes second, as
    /// when two workers take the same task offline). Change ids are
    /// `<prefix>-<task>-<person>-claim|start|complete`. Returns how many changes
    /// were written (accepted or refused), and how many of them were accepted.
    @discardableResult
    @_spi(Benchmark) public func syntheticFreeWork(
        in replica: ReplicaID, limit: Int = .max, workersPerTask: Int = 1,
        prefix: String = "free", madeAt: Date = Date()
    ) throws -> (written: Int, accepted: Int) {
        guard case .team = replica, let queue = try open(replica) else { return (0, 0) }
        let (free, members) = try queue.read { db in
            (
                try Int64.fetchAll(
                    db,
                    sql: """
                        SELECT id FROM tasks WHERE assignee_id IS NULL AND status = 'open' ORDER BY id LIMIT ?
                        """, arguments: [limit]),
                try Int64.fetchAll(db, sql: "SELECT person_id FROM members ORDER BY person_id")
            )
        }
        try queue.close()
        guard !members.isEmpty else { return (0, 0) }
        var work: [Int64: [WorkerChange]] = [:]
        for (index, task) in free.enumerated() {
            for turn in 0..<min(workersPerTask, members.count) {
                let person = members[(index + turn) % members.count]
                work[person, default: []] += [WorkerChange.Operation.claim, .start, .complete].map { operation in
                    WorkerChange(
                        id: "\(prefix)-\(task)-\(person)-\(operation.rawValue)", operation: operation,
                        taskID: task, note: operation == .complete ? "done \(task)" : nil, madeAt: madeAt)
                }
            }
        }
        return try pushEach(work, to: replica)
    }
}
