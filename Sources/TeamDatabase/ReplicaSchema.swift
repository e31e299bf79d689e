import Foundation
import GRDB
import GRDBSQLite
import TeamworkModel

/// The SQLite schema of the replicas, versioned in code. A shipped migration is
/// never modified; a change adds a new one and bumps ``version``.
///
/// Dates are INTEGER milliseconds since 1970 (UTC). Every row that a worker may
/// pull carries `row_version`, taken from the database's own counter
/// (`meta.row_counter`), so a client asks for "rows changed since N"; removed
/// rows leave an entry in `deleted_rows`.
public enum ReplicaSchema {
    /// The schema version written into `meta.schema_version`.
    /// Version 2 added `worker_changes.rejection`; version 3 the tasks'
    /// appointment window and required skills; version 4 the members' skills
    /// and `refusals`, the master's verdicts on worker changes it did not take;
    /// version 5 the tasks' time zone; 6 their plan and day; 7 their checklist
    /// and its answers (`checklist`, `answers`, `master_answers`); 8 the day planner's expected start
    /// and the minutes on site (`planned_start`, `duration_minutes`).
    /// From 9 on, each column a task gains in ``TaskSchema/travelling`` (26 at 9) is a version more
    /// by itself: an older file gains it (``upgrade(_:)``), and the generator's checkpoint, which
    /// names the version, asks for the full rebuild that fills it in every file. One more (the 10
    /// below) is the common replica's parts catalogue (``partsTable``).
    public static let version = 10 + TaskSchema.travelling.count - 26

    /// The metadata record every replica has.
    static let metaTable = """
        CREATE TABLE meta (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            kind TEXT NOT NULL,
            owner_id INTEGER NOT NULL,
            schema_version INTEGER NOT NULL,
            epoch TEXT NOT NULL,
            feed_position INTEGER NOT NULL,
            generated_at INTEGER NOT NULL,
            row_counter INTEGER NOT NULL DEFAULT 0,
            name TEXT NOT NULL DEFAULT '',
            slug TEXT NOT NULL DEFAULT ''
        );
        """

    /// Tombstones: which rows were removed, at which row version.
    static let deletedRowsTable = """
        CREATE TABLE deleted_rows (
            table_name TEXT NOT NULL,
            row_id INTEGER NOT NULL,
            row_version INTEGER NOT NULL,
            PRIMARY KEY (table_name, row_id)
        );
        """

    /// The tasks of a team or personal database, as ``TaskSchema`` declares the columns that
    /// travel: the master's fields come from the master; the field's (worker-owned: status, its
    /// times, note and answers) are what the field says, and `master_<column>` holds the master's
    /// value as last applied, so the generator overwrites the field's only when the master changed it.
    /// `row_version` is the replica's own counter.
    static let tasksTable =
        "CREATE TABLE tasks (\n"
        + (taskColumns.map { "    \($0.name) \($0.type)" } + ["    row_version INTEGER NOT NULL"]).joined(separator: ",\n")
        + "\n);"

    /// Each column of a replica's `tasks` but `row_version`, with its SQLite type.
    static let taskColumns: [(name: String, type: String)] =
        TaskSchema.travelling.map { ($0.replicaName, $0.replica!) }
        + TaskSchema.travelling.filter { $0.owner == .field }.map { ("master_\($0.replicaName)", $0.replica!) }

    /// The tables of a team or personal database.
    static let teamTables = """
        \(metaTable)
        \(tasksTable)
        CREATE INDEX tasks_row_version ON tasks (row_version);
        -- No emails or other contact details: display names and roles only.
        CREATE TABLE members (
            person_id INTEGER PRIMARY KEY,
            first_name TEXT NOT NULL,
            last_name TEXT NOT NULL,
            role TEXT NOT NULL,
            row_version INTEGER NOT NULL,
            -- Comma-separated, sorted; '' when none: what the rules of a claim need.
            skills TEXT NOT NULL DEFAULT ''
        );
        CREATE TABLE locations (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            latitude REAL NOT NULL,
            longitude REAL NOT NULL,
            elevation REAL,
            street TEXT NOT NULL,
            city TEXT NOT NULL,
            region TEXT NOT NULL,
            postal_code TEXT NOT NULL,
            country TEXT NOT NULL,
            row_version INTEGER NOT NULL
        );
        \(deletedRowsTable)
        -- Where worker changes land (written by the sync endpoint, read by the
        -- event listener). position is this database's own increasing number;
        -- change_id is made by the client, so a retried push is stored once.
        CREATE TABLE worker_changes (
            position INTEGER PRIMARY KEY AUTOINCREMENT,
            change_id TEXT NOT NULL UNIQUE,
            person_id INTEGER NOT NULL,
            task_id INTEGER,
            operation TEXT NOT NULL,
            payload TEXT NOT NULL,
            made_at INTEGER NOT NULL,
            received_at INTEGER NOT NULL,
            -- Why the sync endpoint refused the change, NULL when it accepted it.
            -- Refused changes are kept so managers see them (the listener records them).
            rejection TEXT
        );
        \(refusalsTable)
        """

    /// The master's word on worker changes this replica accepted but the master
    /// did not take (written by the generator from the ledger; pulled by devices,
    /// so the worker who made one reads why and their copy returns to the master's).
    static let refusalsTable = """
        CREATE TABLE refusals (
            person_id INTEGER NOT NULL,
            change_id TEXT NOT NULL,
            task_id INTEGER,
            operation TEXT NOT NULL,
            -- The ledger's rule (cancelled, claimed_by_other, missing_skills, invalid, ...).
            rule TEXT NOT NULL,
            reason TEXT NOT NULL,
            decided_at INTEGER NOT NULL,
            row_version INTEGER NOT NULL,
            -- What the dispatcher decided once they looked at it; NULL until then (schema 9).
            decision TEXT,
            PRIMARY KEY (person_id, change_id)
        );
        CREATE INDEX refusals_row_version ON refusals (row_version);
        """

    /// The tables of the common database: everyone's read-only copy of people
    /// (names and roles), teams, memberships and locations.
    static let commonTables = """
        \(metaTable)
        CREATE TABLE people (
            id INTEGER PRIMARY KEY,
            first_name TEXT NOT NULL,
            last_name TEXT NOT NULL,
            role TEXT NOT NULL,
            avatar_url TEXT,
            row_version INTEGER NOT NULL
        );
        CREATE TABLE teams (
            id INTEGER PRIMARY KEY,
            slug TEXT NOT NULL,
            name TEXT NOT NULL,
            description TEXT NOT NULL,
            color TEXT,
            row_version INTEGER NOT NULL
        );
        CREATE TABLE memberships (
            team_id INTEGER NOT NULL,
            person_id INTEGER NOT NULL,
            row_version INTEGER NOT NULL,
            PRIMARY KEY (team_id, person_id)
        );
        CREATE TABLE locations (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,
            person_id INTEGER,
            name TEXT NOT NULL,
            latitude REAL NOT NULL,
            longitude REAL NOT NULL,
            elevation REAL,
            street TEXT NOT NULL,
            city TEXT NOT NULL,
            region TEXT NOT NULL,
            postal_code TEXT NOT NULL,
            country TEXT NOT NULL,
            row_version INTEGER NOT NULL
        );
        \(partsTable)
        \(deletedRowsTable)
        """

    /// The parts catalogue in the common replica: read-only on every device.
    /// Prices are exact decimal text; `retired` is 1 for a part kept for history, no longer offered.
    static let partsTable = """
        CREATE TABLE parts (
            id INTEGER PRIMARY KEY,
            code TEXT NOT NULL,
            name TEXT NOT NULL,
            unit TEXT NOT NULL,
            unit_price TEXT,
            currency TEXT,
            retired INTEGER NOT NULL DEFAULT 0,
            row_version INTEGER NOT NULL
        );
        """

    /// Brings a file of an older version up to ``version`` in place, keeping its
    /// data. Runs in its own immediate transaction, so concurrent openers upgrade once.
    static func upgrade(_ queue: DatabaseQueue) throws {
        try queue.writeWithoutTransaction { db in
            try db.inTransaction(.immediate) {
                let found = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
                guard (1..<version).contains(found) else { return .commit }
                let hasWorkerChanges = try db.tableExists("worker_changes")
                if found < 2, hasWorkerChanges {
                    try db.execute(sql: "ALTER TABLE worker_changes ADD COLUMN rejection TEXT")
                }
                if found < 4, try db.tableExists("members") {
                    // The values arrive with the full rebuild an older checkpoint asks for.
                    if try !db.columns(in: "members").contains(where: { $0.name == "skills" }) {
                        try db.execute(sql: "ALTER TABLE members ADD COLUMN skills TEXT NOT NULL DEFAULT ''")
                    }
                    if try !db.tableExists("refusals") { try db.execute(sql: refusalsTable) }
                }
                if try db.tableExists("tasks") {
                    // Schema 3 (windows, skills), 5 (zones), 6 (plans), 7 (checklists, answers), 8 (planned
                    // starts, minutes on site) and whatever TaskSchema declares since: every column that
                    // travels and is not there yet. The values arrive with the full rebuild an older checkpoint asks for.
                    let has = Set(try db.columns(in: "tasks").map(\.name))
                    for (column, type) in taskColumns where !has.contains(column) {
                        try db.execute(sql: "ALTER TABLE tasks ADD COLUMN \(column) \(type)")
                    }
                }
                if try db.tableExists("people"), try !db.tableExists("parts") {
                    // The common replica carries the parts catalogue; its rows come with the full rebuild.
                    try db.execute(sql: partsTable)
                }
                if found < 9, try db.tableExists("refusals"), try !db.columns(in: "refusals").contains(where: { $0.name == "decision" }) {
                    // Schema 9: the dispatcher's decision on a refusal.
                    try db.execute(sql: "ALTER TABLE refusals ADD COLUMN decision TEXT")
                }
                try db.execute(sql: "UPDATE meta SET schema_version = \(version)")
                try db.execute(sql: "PRAGMA user_version = \(version)")
                return .commit
            }
        }
    }

    /// Creates the tables of a new, empty replica.
    static func create(_ db: Database, for replica: ReplicaID) throws {
        try db.execute(sql: replica == .common ? commonTables : teamTables)
        try db.execute(sql: "PRAGMA user_version = \(version)")
    }

    /// The bytes of an empty file of the replica's kind (tables made, no rows):
    /// a full rebuild writes a thousand new files, and copying these is much
    /// cheaper than running the schema's DDL in each.
    static func emptyFile(for replica: ReplicaID) throws -> [UInt8] {
        try (replica == .common ? emptyCommonFile : emptyTeamFile).get()
    }

    /// Makes `db` (a new in-memory connection) an empty replica of the
    /// replica's kind, kept in memory until it is serialized.
    /// `clearingCaches`: false only over a replica of the same kind loaded
    /// before, whose schema GRDB and the prepared statements already know.
    static func loadEmpty(for replica: ReplicaID, into db: Database, clearingCaches: Bool = true) throws {
        let bytes = try emptyFile(for: replica)
        // SQLite takes the buffer (FREEONCLOSE) and grows it (RESIZEABLE): it must come from sqlite3_malloc.
        guard let buffer = sqlite3_malloc64(sqlite3_uint64(bytes.count)) else { throw ReplicaError("out of memory") }
        bytes.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        let flags = UInt32(SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE)
        let code = sqlite3_deserialize(
            db.sqliteConnection, "main", buffer.assumingMemoryBound(to: UInt8.self),
            sqlite3_int64(bytes.count), sqlite3_int64(bytes.count), flags)
        guard code == SQLITE_OK else { throw ReplicaError("cannot load an empty replica (SQLite code \(code))") }
        if clearingCaches { db.clearSchemaCache() }
    }

    /// The page size of new replica files.
    static let pageSize = 16384

    private static let emptyTeamFile = Result { try serializedEmptyFile(for: .team(0)) }
    private static let emptyCommonFile = Result { try serializedEmptyFile(for: .common) }

    private static func serializedEmptyFile(for replica: ReplicaID) throws -> [UInt8] {
        let queue = try DatabaseQueue()
        return try queue.inDatabase { db in
            // 16 KiB pages: a rebuild's inserts touch a quarter as many pages (A/B, a
            // million tasks: 4.90 s -> 4.55 s on average); a file stays a few hundred KB.
            try db.execute(sql: "PRAGMA page_size = \(pageSize)")
            try create(db, for: replica)
            var size: sqlite3_int64 = 0
            guard let bytes = sqlite3_serialize(db.sqliteConnection, "main", &size, 0) else {
                throw ReplicaError("cannot serialize an empty replica")
            }
            defer { sqlite3_free(bytes) }
            return Array(UnsafeRawBufferPointer(start: bytes, count: Int(size)))
        }
    }
}
