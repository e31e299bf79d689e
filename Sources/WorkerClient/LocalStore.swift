import Foundation
import GRDB
import SyncProtocol
import TeamworkModel

#if canImport(Glibc)
    import Glibc
#endif

/// The worker's device: copies of their replicas and the queue of changes made
/// offline, in one SQLite file.
///
/// The file's schema moves forward with GRDB's `DatabaseMigrator`: a newer
/// `teamwork-worker` opening an older file upgrades it in place and keeps its
/// queue. A file written by a newer tool is refused (update the tool), never
/// touched. Only a damaged file is set aside and started afresh (everything
/// is refetched at the next sync).
public struct LocalStore: Sendable {
    let queue: DatabaseQueue
    /// Where the files of attachments wait to be uploaded: `blobs` beside the database, 0700,
    /// each file named by its SHA-256 and 0600.
    public let blobs: URL

    public init(path: String) throws {
        blobs = URL(fileURLWithPath: path).deletingLastPathComponent().appending(path: "blobs")
        do {
            queue = try Self.open(path)
        } catch let error as TeamworkError {
            throw error
        } catch {
            let aside = path + ".damaged-\(Int(Date().timeIntervalSince1970))"
            try? FileManager.default.moveItem(atPath: path, toPath: aside)
            queue = try Self.open(path)
        }
    }

    /// The file and SQLite's journals beside it: its owner's only.
    static let sidecars = ["", "-journal", "-wal", "-shm"]

    private static func open(_ path: String) throws -> DatabaseQueue {
        // Made 0600 before SQLite opens it: SQLite gives its journals the database file's mode.
        let created = Glibc.open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        if created >= 0 { close(created) }
        for suffix in sidecars where FileManager.default.fileExists(atPath: path + suffix) {
            guard chmod(path + suffix, 0o600) == 0 else {
                throw TeamworkError(.configuration, "cannot make \(path + suffix) private to you (mode 0600)")
            }
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        let migrator = Self.migrator
        try queue.write { db in
            try adoptFirstVersion(db)
            if try migrator.hasBeenSuperseded(db) {
                throw TeamworkError(.configuration, "\(path) was written by a newer teamwork-worker; update this one")
            }
        }
        try migrator.migrate(queue)
        do {
            try queue.write { try declareTaskColumns($0) }
        } catch let error as TeamworkError {
            throw error
        } catch {
            // Not damage (the file stays where it is): busy with another process, or full.
            throw TeamworkError(.unavailable, "\(path): could not add the task's declared columns: \(error)")
        }
        try queue.read { _ = try Int.fetchOne($0, sql: "SELECT count(*) FROM tasks") }
        return queue
    }

    /// The device schema, one migration per version. A shipped migration is never edited: add a new one.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: firstSchema)
        }
        migrator.registerMigration("v2: replica availability, why a change waits") { db in
            try db.execute(
                sql: """
                    ALTER TABLE replicas ADD COLUMN available INTEGER NOT NULL DEFAULT 1;
                    ALTER TABLE outbox ADD COLUMN last_error TEXT;
                    """)
        }
        migrator.registerMigration("v3: positions the worker may see") { db in
            try db.execute(
                sql: """
                    CREATE TABLE positions (person_id INTEGER PRIMARY KEY, teams TEXT NOT NULL, latitude REAL NOT NULL,
                        longitude REAL NOT NULL, reported_at INTEGER NOT NULL);
                    """)
        }
        migrator.registerMigration("v4: appointment windows and required skills") { db in
            // Older copies get the values with the refetch the server's rebuild for them causes.
            try db.execute(
                sql: """
                    ALTER TABLE tasks ADD COLUMN window_start INTEGER;
                    ALTER TABLE tasks ADD COLUMN window_end INTEGER;
                    ALTER TABLE tasks ADD COLUMN required_skills TEXT NOT NULL DEFAULT '';
                    """)
        }
        migrator.registerMigration("v5: the server's view under queued changes, who queued them, members' skills") { db in
            // The server's view starts as what the device shows; the next pull of a task sets it right.
            try db.execute(
                sql: """
                    ALTER TABLE tasks ADD COLUMN server_assignee_id INTEGER;
                    ALTER TABLE tasks ADD COLUMN server_status TEXT NOT NULL DEFAULT 'open';
                    ALTER TABLE tasks ADD COLUMN server_started_at INTEGER;
                    ALTER TABLE tasks ADD COLUMN server_completed_at INTEGER;
                    ALTER TABLE tasks ADD COLUMN server_completed_by INTEGER;
                    ALTER TABLE tasks ADD COLUMN server_completion_note TEXT;
                    UPDATE tasks SET server_assignee_id = assignee_id, server_status = status, server_started_at = started_at,
                        server_completed_at = completed_at, server_completed_by = completed_by,
                        server_completion_note = completion_note;
                    ALTER TABLE outbox ADD COLUMN person_id INTEGER;
                    UPDATE outbox SET person_id = (SELECT CAST(value AS INTEGER) FROM settings WHERE key = 'person_id');
                    ALTER TABLE members ADD COLUMN skills TEXT NOT NULL DEFAULT '';
                    """)
        }
        migrator.registerMigration("v6: each task's time zone") { db in
            // Older copies get the values with the refetch the server's rebuild for them causes.
            try db.execute(sql: "ALTER TABLE tasks ADD COLUMN time_zone TEXT NOT NULL DEFAULT 'UTC'")
        }
        migrator.registerMigration("v7: the plan a task comes from") { db in
            // Older copies get the values with the refetch the server's rebuild for them causes.
            try db.execute(
                sql: """
                    ALTER TABLE tasks ADD COLUMN plan_id INTEGER;
                    ALTER TABLE tasks ADD COLUMN plan_date TEXT;
                    """)
        }
        migrator.registerMigration("v8: checklists and answers") { db in
            // Older copies get the values with the refetch the server's rebuild for them causes.
            try db.execute(
                sql: """
                    ALTER TABLE tasks ADD COLUMN checklist TEXT;
                    ALTER TABLE tasks ADD COLUMN answers TEXT NOT NULL DEFAULT '{}';
                    ALTER TABLE tasks ADD COLUMN server_answers TEXT NOT NULL DEFAULT '{}';
                    ALTER TABLE outbox ADD COLUMN item TEXT;
                    ALTER TABLE outbox ADD COLUMN value TEXT;
                    """)
        }
        migrator.registerMigration("v9: attachments") { db in
            try db.execute(
                sql: """
                    ALTER TABLE outbox ADD COLUMN blob TEXT;
                    ALTER TABLE outbox ADD COLUMN size INTEGER;
                    ALTER TABLE outbox ADD COLUMN media_type TEXT;
                    ALTER TABLE outbox ADD COLUMN signer TEXT;
                    """)
        }
        migrator.registerMigration("v10: the day planner's expected start and minutes on site") { db in
            // Older copies get the values with the refetch the server's rebuild for them causes.
            try db.execute(
                sql: """
                    ALTER TABLE tasks ADD COLUMN planned_start INTEGER;
                    ALTER TABLE tasks ADD COLUMN duration_minutes INTEGER;
                    """)
        }
        migrator.registerMigration("v11: the parts catalogue") { db in
            // The catalogue comes with the common data: the next sync takes the common replica again from its start.
            try db.execute(
                sql: """
                    CREATE TABLE parts (id INTEGER PRIMARY KEY, code TEXT NOT NULL, name TEXT NOT NULL, unit TEXT NOT NULL,
                        unit_price TEXT, currency TEXT, retired INTEGER NOT NULL DEFAULT 0);
                    UPDATE replicas SET position = 0, epoch = NULL WHERE name = 'common';
                    """)
        }
        migrator.registerMigration("v12: accepted changes the master has not confirmed") { db in
            // Changes accepted before this version count as confirmed: they were taken long ago.
            try db.execute(sql: "ALTER TABLE outbox ADD COLUMN unconfirmed INTEGER NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v13: the task's columns as TaskSchema declares them") { db in
            // From here on the declaration adds the task's columns at each open (LocalStore+Declared.swift); a
            // teamwork-worker from before this version refuses the file (it would write rows without them).
            try db.execute(sql: "ALTER TABLE tasks ADD COLUMN declared_by TEXT")
        }
        return migrator
    }

    /// Files of the first release carry `PRAGMA user_version = 1` and no
    /// migration table: record their schema as migration "v1" so the migrator
    /// takes them from there.
    private static func adoptFirstVersion(_ db: Database) throws {
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        guard version == 1, try !db.tableExists("grdb_migrations") else { return }
        try db.execute(
            sql: """
                CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                INSERT INTO grdb_migrations (identifier) VALUES ('v1');
                """)
    }

    /// The schema of the first release (`PRAGMA user_version = 1`): migration "v1".
    public static let firstSchema = """
        CREATE TABLE replicas (name TEXT PRIMARY KEY, kind TEXT NOT NULL, title TEXT NOT NULL, slug TEXT,
            epoch TEXT, position INTEGER NOT NULL DEFAULT 0, synced_at INTEGER);
        CREATE TABLE tasks (replica TEXT NOT NULL, id INTEGER NOT NULL, title TEXT NOT NULL, description TEXT NOT NULL,
            priority TEXT NOT NULL, team_id INTEGER, assignee_id INTEGER, location_id INTEGER, due_at INTEGER,
            status TEXT NOT NULL, started_at INTEGER, completed_at INTEGER, completed_by INTEGER, completion_note TEXT,
            PRIMARY KEY (replica, id));
        CREATE TABLE members (replica TEXT NOT NULL, person_id INTEGER NOT NULL, first_name TEXT NOT NULL,
            last_name TEXT NOT NULL, role TEXT NOT NULL, PRIMARY KEY (replica, person_id));
        CREATE TABLE locations (replica TEXT NOT NULL, id INTEGER NOT NULL, name TEXT NOT NULL, latitude REAL NOT NULL,
            longitude REAL NOT NULL, street TEXT NOT NULL, city TEXT NOT NULL, country TEXT NOT NULL,
            PRIMARY KEY (replica, id));
        CREATE TABLE outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, change_id TEXT NOT NULL UNIQUE, replica TEXT NOT NULL,
            operation TEXT NOT NULL, task_id INTEGER, note TEXT, made_at INTEGER NOT NULL, latitude REAL, longitude REAL,
            state TEXT NOT NULL DEFAULT 'pending', reason TEXT);
        CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE people (id INTEGER PRIMARY KEY, first_name TEXT NOT NULL, last_name TEXT NOT NULL, role TEXT NOT NULL);
        CREATE TABLE teams (id INTEGER PRIMARY KEY, slug TEXT NOT NULL, name TEXT NOT NULL);
        CREATE TABLE memberships (team_id INTEGER NOT NULL, person_id INTEGER NOT NULL, PRIMARY KEY (team_id, person_id));
        """

    // MARK: Replicas

    public struct Replica: Sendable, Equatable {
        public var name: String
        public var kind: String
        public var title: String
        public var slug: String?
        public var epoch: String?
        public var position: Int64
        /// Whether the server had generated it at the last sync.
        public var available: Bool
    }

    /// Whether the device's copy of `name` stands at this epoch and position.
    private static func stands(_ db: Database, _ name: String, at position: (epoch: String, since: Int64)) throws -> Bool {
        let row = try Row.fetchOne(db, sql: "SELECT epoch, position FROM replicas WHERE name = ?", arguments: [name])
        return row.map { ($0["epoch"] as String?) == position.epoch && ($0["position"] as Int64) == position.since } ?? false
    }

    public func replicas() throws -> [Replica] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT name, kind, title, slug, epoch, position, available FROM replicas ORDER BY name").map {
                Replica(
                    name: $0["name"], kind: $0["kind"], title: $0["title"], slug: $0["slug"], epoch: $0["epoch"], position: $0["position"],
                    available: $0["available"])
            }
        }
    }

    /// Records a replica the server lists (keeping its position if known).
    func register(name: String, kind: String, title: String, slug: String?, available: Bool) throws {
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO replicas (name, kind, title, slug, available) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, title = excluded.title, slug = excluded.slug,
                        available = excluded.available
                    """, arguments: [name, kind, title, slug, available])
        }
    }

    /// Where a check-in goes: it is about the person, not a task, so any of
    /// their replicas the server has generated takes it — their personal one
    /// if it exists, else their first team's. `nil` before the first sync.
    public func checkinReplica() throws -> String? {
        let candidates = try replicas().filter { $0.kind != "common" && $0.available }
        return (candidates.first { $0.kind == "person" } ?? candidates.first)?.name
    }

    /// Drops the local copy of a replica the worker may no longer read.
    func remove(replica name: String) throws {
        try queue.write { db in
            for table in ["tasks", "members", "locations", "replicas"] where name != "common" || table == "replicas" {
                try db.execute(sql: "DELETE FROM \(table) WHERE \(table == "replicas" ? "name" : "replica") = ?", arguments: [name])
            }
        }
    }

    /// Applies pages of changes in one transaction; with `replace`, the old copy
    /// goes first (a refetch), so the copy is swapped whole or not at all.
    /// `continuing`: apply only if the copy stands at this epoch and position (checked in the same
    /// transaction); nil is returned when it does not.
    func apply(_ pages: [ChangePage], to name: String, replace: Bool, continuing: (epoch: String, since: Int64)? = nil) throws -> Int? {
        try queue.write { db in
            if let continuing, try !Self.stands(db, name, at: continuing) { return nil }
            if replace {
                for table in ["tasks", "members", "locations"] {
                    try db.execute(sql: "DELETE FROM \(table) WHERE replica = ?", arguments: [name])
                }
            }
            var rows = 0
            for page in pages {
                for task in page.tasks {
                    // Shown as the server has it; the device's queued changes are played over it below.
                    try Self.insert(task.task, into: name, db)
                }
                for member in page.members {
                    try db.execute(
                        sql: """
                            INSERT OR REPLACE INTO members (replica, person_id, first_name, last_name, role, skills)
                            VALUES (?, ?, ?, ?, ?, ?)
                            """,
                        arguments: [
                            name, member.personID, member.firstName, member.lastName, member.role,
                            (member.skills ?? []).joined(separator: ","),
                        ])
                }
                for location in page.locations {
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO locations VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        arguments: [
                            name, location.id, location.name, location.latitude, location.longitude,
                            location.street, location.city, location.country,
                        ])
                }
                for deletion in page.deleted {
                    let (table, column) =
                        switch deletion.table {
                        case "members": ("members", "person_id")
                        case "locations": ("locations", "id")
                        default: ("tasks", "id")
                        }
                    try db.execute(sql: "DELETE FROM \(table) WHERE replica = ? AND \(column) = ?", arguments: [name, deletion.id])
                }
                try Self.markRefused(db, page.refused ?? [])
                rows +=
                    page.tasks.count + page.members.count + page.locations.count + page.deleted.count
                    + (page.refused?.count ?? 0)
            }
            try Self.replay(db, replica: name)
            if let last = pages.last {
                try db.execute(
                    sql: "UPDATE replicas SET epoch = ?, position = ?, synced_at = ? WHERE name = ?",
                    arguments: [last.epoch, last.upTo, Int64(Date().timeIntervalSince1970), name])
            }
            return rows
        }
    }

    /// Applies pages of the common replica (people, teams, memberships) the same way.
    func apply(common pages: [CommonPage], replace: Bool, continuing: (epoch: String, since: Int64)? = nil) throws -> Int? {
        try queue.write { db in
            if let continuing, try !Self.stands(db, "common", at: continuing) { return nil }
            if replace {
                for table in ["people", "teams", "memberships", "parts"] { try db.execute(sql: "DELETE FROM \(table)") }
            }
            var rows = 0
            for page in pages {
                for person in page.people {
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO people VALUES (?, ?, ?, ?)",
                        arguments: [person.id, person.firstName, person.lastName, person.role])
                }
                for team in page.teams {
                    try db.execute(sql: "INSERT OR REPLACE INTO teams VALUES (?, ?, ?)", arguments: [team.id, team.slug, team.name])
                }
                for membership in page.memberships {
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO memberships VALUES (?, ?)",
                        arguments: [membership.teamID, membership.personID])
                }
                for part in page.parts {
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO parts VALUES (?, ?, ?, ?, ?, ?, ?)",
                        arguments: [part.id, part.code, part.name, part.unit, part.unitPrice, part.currency, part.retired])
                }
                for deletion in page.deleted {
                    switch deletion.table {
                    case "parts": try db.execute(sql: "DELETE FROM parts WHERE id = ?", arguments: [deletion.id])
                    case "people": try db.execute(sql: "DELETE FROM people WHERE id = ?", arguments: [deletion.id])
                    case "teams": try db.execute(sql: "DELETE FROM teams WHERE id = ?", arguments: [deletion.id])
                    case "memberships":
                        try db.execute(
                            sql: "DELETE FROM memberships WHERE team_id = ? AND person_id = ?",
                            arguments: [deletion.id >> 32, deletion.id & 0xFFFF_FFFF])
                    default: break
                    }
                }
                rows += page.people.count + page.teams.count + page.memberships.count + page.parts.count + page.deleted.count
            }
            if let last = pages.last {
                try db.execute(
                    sql: "UPDATE replicas SET epoch = ?, position = ?, synced_at = ? WHERE name = 'common'",
                    arguments: [last.epoch, last.upTo, Int64(Date().timeIntervalSince1970)])
            }
            return rows
        }
    }

    /// The parts catalogue as the device holds it (from the common data), by code; retired parts
    /// only with `retired`.
    public func parts(retired: Bool = false) throws -> [CommonPage.Part] {
        try queue.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM parts WHERE ? OR retired = 0 ORDER BY lower(code)", arguments: [retired]
            ).map {
                CommonPage.Part(
                    id: $0["id"], code: $0["code"], name: $0["name"], unit: $0["unit"], unitPrice: $0["unit_price"],
                    currency: $0["currency"], retired: ($0["retired"] as Int64) != 0, rowVersion: 0)
            }
        }
    }

    /// A member's skills as the replica lists them; `nil` when it does not list the person.
    public func skills(of personID: Int64, in replica: String) throws -> [String]? {
        try queue.read { db in
            try String.fetchOne(db, sql: "SELECT skills FROM members WHERE replica = ? AND person_id = ?", arguments: [replica, personID])
                .map { $0.split(separator: ",").map(String.init) }
        }
    }

    /// A person's name from the common data, if the device has it.
    public func personName(_ id: Int64) throws -> String? {
        try queue.read { db in
            try Row.fetchOne(db, sql: "SELECT first_name, last_name FROM people WHERE id = ?", arguments: [id])
                .map { "\($0["first_name"] as String) \($0["last_name"] as String)" }
        }
    }

    // MARK: Settings

    public func setting(_ key: String) throws -> String? {
        try queue.read { try String.fetchOne($0, sql: "SELECT value FROM settings WHERE key = ?", arguments: [key]) }
    }

    func set(_ key: String, _ value: String) throws {
        try queue.write { try $0.execute(sql: "INSERT OR REPLACE INTO settings VALUES (?, ?)", arguments: [key, value]) }
    }
}
