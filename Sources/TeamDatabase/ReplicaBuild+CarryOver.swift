import Foundation
import GRDB
import GRDBSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// What a new file takes over from the file it replaces.
extension ReplicaBuild {
    /// How long, in seconds, a rebuilt file keeps a refused worker change: 30 days.
    static let refusedChangesKeptFor = 30 * 86_400

    /// Carries over into `db`, from the file being replaced, what only that
    /// file knows: worker changes not yet applied to the master, the master's
    /// recent refusals (for devices that have not pulled them), and the
    /// field's view of the tasks wherever the master has not changed those
    /// fields since. A damaged or incompatible old file has nothing usable to
    /// give and is left alone.
    static func carryOver(_ db: Database, from oldPath: String) throws {
        // Asked on a connection of its own: attaching and detaching the old file
        // would make the build connection prepare all its statements again.
        guard holdsWorkerChanges(oldPath) else { return }
        do {
            try db.execute(sql: "ATTACH DATABASE ? AS previous", arguments: [oldPath])
        } catch {
            return
        }
        defer { try? db.execute(sql: "DETACH DATABASE previous") }
        guard let previousVersion = try? Int.fetchOne(db, sql: "PRAGMA previous.user_version"),
            (1...ReplicaSchema.version).contains(previousVersion)
        else { return }
        let rejection = previousVersion >= 2 ? "rejection" : "NULL"
        // Deferred: an immediate transaction would also take the write lock of every
        // attached file, the common replica that all build connections attach included.
        try db.inTransaction(.deferred) {
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO worker_changes
                        (position, change_id, person_id, task_id, operation, payload, made_at, received_at, rejection)
                    SELECT position, change_id, person_id, task_id, operation, payload, made_at, received_at, \(rejection)
                    FROM previous.worker_changes
                    -- Refused changes are for managers to see, not to keep for ever: the listener has long
                    -- recorded them in the master's ledger (where conflicts stay until resolved).
                    WHERE \(rejection) IS NULL OR received_at > (CAST(strftime('%s', 'now') AS INTEGER) - \(Self.refusedChangesKeptFor)) * 1000
                    """)
            if previousVersion >= 4 {
                // The master's refusals, which devices may not have pulled yet; new row versions, after the build's.
                try db.execute(
                    sql: """
                        INSERT OR IGNORE INTO main.refusals
                            (person_id, change_id, task_id, operation, rule, reason, decided_at, decision, row_version)
                        SELECT person_id, change_id, task_id, operation, rule, reason, decided_at,
                               \(previousVersion >= 9 ? "decision" : "NULL"),
                               (SELECT row_counter FROM main.meta) + row_number() OVER (ORDER BY row_version)
                        FROM previous.refusals
                        WHERE decided_at > (CAST(strftime('%s', 'now') AS INTEGER) - \(Self.refusedChangesKeptFor)) * 1000
                        """)
                try db.execute(sql: "UPDATE main.meta SET row_counter = row_counter + ?", arguments: [db.changesCount])
            }
            // The field's columns (TaskSchema's worker-owned ones) the previous file has: answers from schema 7 on.
            let had = Set(try Row.fetchAll(db, sql: "PRAGMA previous.table_info(tasks)").map { $0["name"] as String })
            let field = ReplicaTransaction.fieldColumns.filter { had.contains($0) && had.contains("master_\($0)") }
            func list(_ prefix: String) -> String { field.map { prefix + $0 }.joined(separator: ", ") }
            try db.execute(
                sql: """
                    UPDATE main.tasks SET \(field.map { "\($0) = p.\($0)" }.joined(separator: ", "))
                    FROM previous.tasks AS p
                    WHERE p.id = tasks.id
                      -- Only tasks a worker changed can differ: a lookup each, not a pass over every task.
                      AND p.id IN (SELECT task_id FROM previous.worker_changes)
                      AND (\(list("p."))) IS NOT (\(list("p.master_")))
                      AND (\(list("tasks.master_"))) IS (\(list("p.master_")))
                    """)
            return .commit
        }
    }

    /// Whether the replica file at `path` has worker changes, and so may have
    /// something to carry over: only a worker's change makes a file's view of a
    /// task differ from the master's, and each is recorded in worker_changes in
    /// the same transaction (and carried over with it). `false` for a file that
    /// is damaged or of another schema; `true` when it is locked too long to tell.
    static func holdsWorkerChanges(_ path: String) -> Bool {
        var connection: OpaquePointer?
        defer { sqlite3_close_v2(connection) }
        guard sqlite3_open_v2(path, &connection, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK else {
            return false
        }
        sqlite3_busy_timeout(connection, 2000)
        func integer(_ sql: String) -> Int64? {
            var statement: OpaquePointer?
            defer { sqlite3_finalize(statement) }
            guard sqlite3_prepare_v2(connection, sql, -1, &statement, nil) == SQLITE_OK,
                sqlite3_step(statement) == SQLITE_ROW
            else { return nil }
            return sqlite3_column_int64(statement, 0)
        }
        guard let version = integer("PRAGMA user_version") else { return isLocked(connection) }
        guard (1...Int64(ReplicaSchema.version)).contains(version) else { return false }
        guard let any = integer("SELECT EXISTS (SELECT 1 FROM worker_changes)") else { return isLocked(connection) }
        return any == 1
    }

    private static func isLocked(_ connection: OpaquePointer?) -> Bool {
        let code = sqlite3_errcode(connection) & 0xff
        return code == SQLITE_BUSY || code == SQLITE_LOCKED
    }

    /// Carries over again into a finished file, at `newPath`, from the file it
    /// replaces (see ``carryOver(_:from:)``): run under the replica's lock when
    /// the old file changed after the build carried over from it.
    static func carryOver(into newPath: String, from oldPath: String) throws {
        let queue = try DatabaseQueue(path: newPath)
        defer { try? queue.close() }
        try queue.writeWithoutTransaction { db in try carryOver(db, from: oldPath) }
    }
}
