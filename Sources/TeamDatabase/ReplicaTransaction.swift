import Foundation
import GRDB
import GRDBSQLite
import TeamworkModel

/// Writes to one replica inside one SQLite transaction. Used both to fill a new
/// file (full rebuild) and to update an existing one (incremental catch-up), so
/// the two modes write rows the same way.
///
/// Every row written gets the next `row_version`; a row whose content did not
/// change keeps its version, so a pull of "changes since N" stays small.
public final class ReplicaTransaction {
    let db: Database
    public let replica: ReplicaID
    private var counter: Int64
    private let upsertTask: Statement
    private let upsertLocation: Statement
    private let fresh: Bool

    /// `fresh`: the file is being built from scratch (``ReplicaBuild``), so its
    /// tables hold only what this build wrote, and its row counter starts at
    /// `counter` (0 for a new file).
    init(_ db: Database, replica: ReplicaID, fresh: Bool = false, counter: Int64 = 0) throws {
        self.db = db
        self.replica = replica
        self.fresh = fresh
        self.counter = fresh ? counter : try Int64.fetchOne(db.cachedStatement(sql: "SELECT row_counter FROM meta")) ?? 0
        // In a new file a row written twice (catch-up can build a file from
        // several entries about one task) is the master's row both times:
        // replacing it is enough, and much cheaper to prepare than the upsert.
        let (task, location) =
            replica == .common
            ? ("SELECT 1", Self.upsertCommonLocationSQL)
            : fresh ? (Self.replaceTaskSQL, Self.replaceLocationSQL) : (Self.upsertTaskSQL, Self.upsertLocationSQL)
        // Cached: a connection that builds file after file (``BuildConnection``) prepares them once.
        upsertTask = try db.cachedStatement(sql: task)
        upsertLocation = try db.cachedStatement(sql: location)
    }

    /// The last row version given out.
    var rowCounter: Int64 { counter }

    func nextVersion() -> Int64 {
        counter += 1
        return counter
    }

    /// Saves the row counter and the feed position this replica now reflects.
    func finish(feedPosition: Int64) throws {
        try db.cachedStatement(sql: "UPDATE meta SET row_counter = ?, feed_position = max(feed_position, ?)")
            .execute(arguments: [counter, feedPosition])
    }

    // MARK: Tasks

    /// The columns that travel (``TaskSchema/travelling``), bound as parameters 1...n in that order;
    /// the row version is n + 1.
    static let travelling = TaskSchema.travelling
    static let rowVersionParameter = travelling.count + 1
    /// The field's columns (worker-owned), each kept beside `master_<column>`.
    static let fieldColumns = travelling.filter { $0.owner == .field }.map(\.replicaName)

    /// Every column from the master, the field's ones twice (as the field's and as the master's).
    static let insertTaskSQL: String = {
        let names = travelling.map(\.replicaName) + fieldColumns.map { "master_\($0)" } + ["row_version"]
        let parameters =
            travelling.indices.map { "?\($0 + 1)" }
            + travelling.indices.filter { travelling[$0].owner == .field }.map { "?\($0 + 1)" } + ["?\(rowVersionParameter)"]
        return """
            INSERT INTO tasks (\(names.joined(separator: ", ")))
            VALUES (\(parameters.joined(separator: ", ")))
            """
    }()

    static let replaceTaskSQL = insertTaskSQL.replacing("INSERT INTO", with: "INSERT OR REPLACE INTO", maxReplacements: 1)

    /// The master's columns as the master says; the field's ones only when the master changed its own.
    static let upsertTaskSQL: String = {
        let set = travelling.filter { $0.replicaName != "id" }.map { column -> String in
            let name = column.replicaName
            guard column.owner == .field else { return "\(name) = excluded.\(name)" }
            return "\(name) = CASE WHEN \(masterFieldWorkChanged) THEN excluded.\(name) ELSE tasks.\(name) END, "
                + "master_\(name) = excluded.master_\(name)"
        }
        return """
            \(insertTaskSQL)
            ON CONFLICT (id) DO UPDATE SET
                \((set + ["row_version = excluded.row_version"]).joined(separator: ",\n    "))
            WHERE tasks.master_version IS NOT excluded.master_version\(derivedChanged)
            """
    }()

    /// ` OR (derived columns) IS NOT (their new values)`: a fact read from other tables changed
    /// while the task's version stayed (TaskColumn.derived).
    static let derivedChanged: String = {
        let derived = travelling.filter(\.derived).map(\.replicaName)
        guard !derived.isEmpty else { return "" }
        return
            " OR (\(derived.map { "tasks.\($0)" }.joined(separator: ", "))) IS NOT (\(derived.map { "excluded.\($0)" }.joined(separator: ", ")))"
    }()

    /// Every field the master's, whatever the replica held: after the master
    /// refused a change this replica had already shown, its view must go. Written
    /// when the replica's view differs in what a device changes (the field's columns
    /// and a claim's assignee) or in the master's version.
    static let refreshTaskSQL: String = {
        let names = travelling.filter { $0.replicaName != "id" }.map(\.replicaName) + fieldColumns.map { "master_\($0)" } + ["row_version"]
        let watched = travelling.filter { $0.owner != .master || $0.derived }.map(\.replicaName) + ["master_version"]
        return """
            \(insertTaskSQL)
            ON CONFLICT (id) DO UPDATE SET
                \(names.map { "\($0) = excluded.\($0)" }.joined(separator: ", "))
            WHERE (\(watched.map { "tasks.\($0)" }.joined(separator: ", ")))
                IS NOT (\(watched.map { "excluded.\($0)" }.joined(separator: ", ")))
            """
    }()

    /// True when the master's own worker-owned fields differ from the values last
    /// applied: the master changed them (a manager reopened or cancelled the task,
    /// or the listener recorded a completion), so they win over the local ones.
    static let masterFieldWorkChanged =
        "(" + fieldColumns.map { "tasks.master_\($0) IS NOT excluded.master_\($0)" }.joined(separator: " OR ") + ")"

    /// Inserts or updates a task from the master, keeping worker-owned fields the
    /// master has not changed; with `refreshing`, taking every field from the
    /// master (the master refused a change this replica had shown).
    public func upsert(_ task: FieldTask, refreshing: Bool = false) throws {
        // Bound through the C API: this runs once per task in a full rebuild.
        let statement = refreshing && !fresh ? try db.cachedStatement(sql: Self.refreshTaskSQL) : upsertTask
        let bind = Binder(statement.sqliteStatement)
        for (column, index) in zip(Self.travelling, Int32(1)...) {
            switch column.stored(column.value(task)) {
            case .integer(let value): bind(index, value)
            case .text(let value): bind(index, value)
            default: bind.null(index)
            }
        }
        bind(Int32(Self.rowVersionParameter), nextVersion())
        try bind.step(db)
    }

    /// Inserts or updates a task whose fields `bind` binds as parameters 1...n, the columns
    /// ``TaskSchema/travelling`` declares in its order (dates in milliseconds).
    public func upsertTask(_ bind: (Binder) throws -> Void) throws {
        let binder = Binder(upsertTask.sqliteStatement)
        try bind(binder)
        binder(Int32(Self.rowVersionParameter), nextVersion())
        try binder.step(db)
    }

    /// Records the master's refusal of a change this replica accepted, for the
    /// devices to pull: once per change, and again (a new row version) when the
    /// dispatcher's decision on it comes.
    public func recordRefusal(_ refusal: FieldRefusal) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO refusals (person_id, change_id, task_id, operation, rule, reason, decided_at, row_version, decision)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (person_id, change_id) DO UPDATE SET decision = excluded.decision, row_version = excluded.row_version
                WHERE excluded.decision IS NOT NULL AND refusals.decision IS NOT excluded.decision
                """
        ).execute(arguments: [
            refusal.personID, refusal.changeID, refusal.taskID, refusal.operation, refusal.rule,
            refusal.reason, refusal.decidedAt.millisecondsSince1970, nextVersion(), refusal.decision,
        ])
    }

    /// Removes a task (it left this replica or was deleted) and leaves a tombstone.
    public func deleteTask(id: Int64) throws {
        try delete(from: "tasks", column: "id", id: id)
    }

    private func delete(from table: String, column: String, id: Int64) throws {
        try db.execute(sql: "DELETE FROM \(table) WHERE \(column) = ?", arguments: [id])
        if db.changesCount > 0 {
            try db.execute(
                sql: "INSERT OR REPLACE INTO deleted_rows (table_name, row_id, row_version) VALUES (?, ?, ?)",
                arguments: [table, id, nextVersion()]
            )
        }
    }

    // MARK: Locations

    static let insertLocationSQL = """
        INSERT INTO locations (id, name, latitude, longitude, elevation, street, city, region, postal_code, country, row_version)
        VALUES (?1, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
        """

    static let replaceLocationSQL = insertLocationSQL.replacing(
        "INSERT INTO", with: "INSERT OR REPLACE INTO",
        maxReplacements: 1)

    static let upsertLocationSQL = """
        \(insertLocationSQL)
        ON CONFLICT (id) DO UPDATE SET name = excluded.name, latitude = excluded.latitude, longitude = excluded.longitude,
            elevation = excluded.elevation, street = excluded.street, city = excluded.city, region = excluded.region,
            postal_code = excluded.postal_code, country = excluded.country, row_version = excluded.row_version
        WHERE (locations.name, locations.latitude, locations.longitude, locations.elevation, locations.street, locations.city,
               locations.region, locations.postal_code, locations.country)
            IS NOT (excluded.name, excluded.latitude, excluded.longitude, excluded.elevation, excluded.street, excluded.city,
               excluded.region, excluded.postal_code, excluded.country)
        """

    static let upsertCommonLocationSQL = """
        INSERT INTO locations (id, kind, person_id, name, latitude, longitude, elevation, street, city, region, postal_code,
            country, row_version)
        VALUES (?1, ?2, ?13, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
        ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, person_id = excluded.person_id, name = excluded.name,
            latitude = excluded.latitude, longitude = excluded.longitude, elevation = excluded.elevation,
            street = excluded.street, city = excluded.city, region = excluded.region, postal_code = excluded.postal_code,
            country = excluded.country, row_version = excluded.row_version
        WHERE (locations.kind, locations.person_id, locations.name, locations.latitude, locations.longitude,
               locations.elevation, locations.street, locations.city, locations.region, locations.postal_code, locations.country)
            IS NOT (excluded.kind, excluded.person_id, excluded.name, excluded.latitude, excluded.longitude,
               excluded.elevation, excluded.street, excluded.city, excluded.region, excluded.postal_code, excluded.country)
        """

    public func upsert(_ location: Location) throws {
        let bind = Binder(upsertLocation.sqliteStatement)
        bind(1, location.id)
        bind(2, location.kind.rawValue)
        bind(3, location.name)
        bind(4, location.latitude)
        bind(5, location.longitude)
        bind(6, location.elevation)
        bind(7, location.address.street)
        bind(8, location.address.city)
        bind(9, location.address.region)
        bind(10, location.address.postalCode)
        bind(11, location.address.country)
        bind(12, nextVersion())
        bind(13, location.personID)
        try bind.step(db)
    }

    public func deleteLocation(id: Int64) throws {
        try delete(from: "locations", column: "id", id: id)
    }

    /// Copies from the database attached as `common` (a common replica) the
    /// locations this replica's tasks point at: the full rebuild's way to fill
    /// a new file's locations, one statement per file.
    public func copyLocationsOfTasks() throws {
        try db.cachedStatement(
            sql: """
                INSERT OR REPLACE INTO main.locations
                    (id, name, latitude, longitude, elevation, street, city, region, postal_code, country, row_version)
                SELECT id, name, latitude, longitude, elevation, street, city, region, postal_code, country,
                       ? + row_number() OVER (ORDER BY id)
                FROM common.locations WHERE id IN (SELECT location_id FROM main.tasks)
                """
        ).execute(arguments: [counter])
        counter += Int64(db.changesCount)
    }

    /// Drops the locations no task of this replica points at any more.
    public func pruneLocations() throws {
        let unused = try Int64.fetchAll(
            db,
            sql: """
                SELECT id FROM locations WHERE id NOT IN (SELECT location_id FROM tasks WHERE location_id IS NOT NULL)
                """)
        for id in unused { try deleteLocation(id: id) }
    }

    // MARK: Members (team replicas) and common data

    /// Makes the member list exactly `members`.
    public func replaceMembers(_ members: [Person]) throws {
        let wanted = Set(members.map(\.id))
        if !fresh {
            for id in try Int64.fetchAll(db, sql: "SELECT person_id FROM members") where !wanted.contains(id) {
                try delete(from: "members", column: "person_id", id: id)
            }
        }
        guard !members.isEmpty else { return }
        let upsert = try db.cachedStatement(
            sql: """
                INSERT INTO members (person_id, first_name, last_name, role, skills, row_version) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (person_id) DO UPDATE SET first_name = excluded.first_name, last_name = excluded.last_name,
                    role = excluded.role, skills = excluded.skills, row_version = excluded.row_version
                WHERE (members.first_name, members.last_name, members.role, members.skills)
                    IS NOT (excluded.first_name, excluded.last_name, excluded.role, excluded.skills)
                """)
        for person in members {
            try upsert.execute(arguments: [
                person.id, person.firstName, person.lastName, person.role.rawValue,
                person.skills.sorted().joined(separator: ","), nextVersion(),
            ])
        }
    }

    /// Records the team's (or person's) display name and slug in `meta`.
    public func setOwner(name: String, slug: String) throws {
        try db.cachedStatement(sql: "UPDATE meta SET name = ?, slug = ? WHERE name IS NOT ? OR slug IS NOT ?")
            .execute(arguments: [name, slug, name, slug])
    }

    public func upsert(_ person: Person) throws {
        try db.execute(
            sql: """
                INSERT INTO people (id, first_name, last_name, role, avatar_url, row_version) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET first_name = excluded.first_name, last_name = excluded.last_name,
                    role = excluded.role, avatar_url = excluded.avatar_url, row_version = excluded.row_version
                WHERE (people.first_name, people.last_name, people.role, people.avatar_url)
                    IS NOT (excluded.first_name, excluded.last_name, excluded.role, excluded.avatar_url)
                """, arguments: [person.id, person.firstName, person.lastName, person.role.rawValue, person.avatarURL, nextVersion()])
    }

    /// A part of the catalogue (common replica only): written, with a new row version, only when it differs.
    public func upsert(_ part: Part) throws {
        try db.execute(
            sql: """
                INSERT INTO parts (id, code, name, unit, unit_price, currency, retired, row_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET code = excluded.code, name = excluded.name, unit = excluded.unit,
                    unit_price = excluded.unit_price, currency = excluded.currency, retired = excluded.retired,
                    row_version = excluded.row_version
                WHERE (parts.code, parts.name, parts.unit, parts.unit_price, parts.currency, parts.retired)
                    IS NOT (excluded.code, excluded.name, excluded.unit, excluded.unit_price, excluded.currency, excluded.retired)
                """,
            arguments: [
                part.id, part.code, part.name, part.unit.rawValue, part.unitPrice, part.currency, part.retiredAt == nil ? 0 : 1,
                nextVersion(),
            ])
    }

    public func deletePart(id: Int64) throws {
        try delete(from: "parts", column: "id", id: id)
    }

    public func deletePerson(id: Int64) throws {
        try delete(from: "people", column: "id", id: id)
    }

    public func upsert(_ team: Team) throws {
        try db.execute(
            sql: """
                INSERT INTO teams (id, slug, name, description, color, row_version) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET slug = excluded.slug, name = excluded.name, description = excluded.description,
                    color = excluded.color, row_version = excluded.row_version
                WHERE (teams.slug, teams.name, teams.description, teams.color)
                    IS NOT (excluded.slug, excluded.name, excluded.description, excluded.color)
                """, arguments: [team.id, team.slug, team.name, team.description, team.color, nextVersion()])
    }

    public func deleteTeam(id: Int64) throws {
        try delete(from: "teams", column: "id", id: id)
    }

    /// Makes the memberships of one person exactly `teamIDs`.
    public func replaceMemberships(personID: Int64, teamIDs: Set<Int64>) throws {
        // Not looked up in a new file: the lookup scans every membership (they are keyed by team
        // first), which made a rebuild's common replica cost people x memberships.
        let current =
            fresh
            ? []
            : Set(
                try Int64.fetchAll(
                    db, sql: "SELECT team_id FROM memberships WHERE person_id = ?",
                    arguments: [personID]))
        for teamID in current.subtracting(teamIDs) {
            try db.execute(sql: "DELETE FROM memberships WHERE team_id = ? AND person_id = ?", arguments: [teamID, personID])
            // A membership's row id in deleted_rows packs both ids: team * 2^32 + person.
            try db.execute(
                sql: "INSERT OR REPLACE INTO deleted_rows (table_name, row_id, row_version) VALUES ('memberships', ?, ?)",
                arguments: [teamID << 32 | personID, nextVersion()]
            )
        }
        for teamID in teamIDs.subtracting(current) {
            try db.execute(
                sql: "INSERT INTO memberships (team_id, person_id, row_version) VALUES (?, ?, ?)",
                arguments: [teamID, personID, nextVersion()])
        }
    }
}

/// Binds parameters of a prepared statement with SQLite's C API and runs it:
/// no boxing of each value, which matters when a rebuild writes a million rows.
public struct Binder {
    let statement: SQLiteStatement

    init(_ statement: SQLiteStatement) {
        self.statement = statement
    }

    /// SQLite copies bound text before the call returns.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    public func callAsFunction(_ index: Int32, _ value: Int64?) {
        if let value { sqlite3_bind_int64(statement, index, value) } else { sqlite3_bind_null(statement, index) }
    }

    public func callAsFunction(_ index: Int32, _ value: Double?) {
        if let value { sqlite3_bind_double(statement, index, value) } else { sqlite3_bind_null(statement, index) }
    }

    /// Binds UTF-8 text straight from a buffer (SQLite copies it).
    public func text(_ index: Int32, _ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else {
            sqlite3_bind_text(statement, index, "", 0, Self.transient)
            return
        }
        sqlite3_bind_text(statement, index, base.assumingMemoryBound(to: CChar.self), Int32(bytes.count), Self.transient)
    }

    public func null(_ index: Int32) {
        sqlite3_bind_null(statement, index)
    }

    public func callAsFunction(_ index: Int32, _ value: String?) {
        guard let value else {
            sqlite3_bind_null(statement, index)
            return
        }
        if value.isEmpty {
            // A nil pointer would bind NULL, not the empty string.
            sqlite3_bind_text(statement, index, "", 0, Self.transient)
            return
        }
        var copy = value
        copy.withUTF8 { bytes in
            _ = bytes.withMemoryRebound(to: CChar.self) {
                sqlite3_bind_text(statement, index, $0.baseAddress, Int32($0.count), Self.transient)
            }
        }
    }

    /// Runs the statement once and resets it for the next row.
    func step(_ db: Database) throws {
        let code = sqlite3_step(statement)
        sqlite3_reset(statement)
        guard code == SQLITE_DONE else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
        }
    }
}
