import Foundation

/// A task's columns, declared once: what the master selects (``TaskColumn/master``), what a
/// replica stores and how (``TaskColumn/replica``, ``TaskColumn/kind``), who writes it there
/// (``TaskColumn/owner``), and how a ``FieldTask`` gives its value (``TaskColumn/value``).
///
/// Everything else is derived from this table: the master's task select and its decoder
/// (CentralStore's `Columns.task`), the full rebuild's binary row and its copier, a replica's
/// `tasks` table, its upgrade and its upserts, what a replica is read back as, and what `verify`
/// compares (every column that travels, and nothing else: a column the master alone keeps can
/// never be drift). A new column is a migration, a ``FieldTask`` property read in
/// ``FieldTask/init(values:)``, and a row here (`scripts/column-footprint` counts the files).
public enum TaskSchema {
    /// Every column of a task, in the order the master selects them.
    public static let columns: [TaskColumn] = [
        .init("id", .integer, replica: "INTEGER PRIMARY KEY") { .integer($0.id) },
        .init("title", .text, replica: "TEXT NOT NULL") { .text($0.title) },
        .init("description", .text, replica: "TEXT NOT NULL") { .text($0.description) },
        .init("priority", .text, replica: "TEXT NOT NULL", wire: .oneOf(Priority.allCases.map(\.rawValue))) { .text($0.priority.rawValue) },
        .init("status", .text, replica: "TEXT NOT NULL", owner: .field, wire: .oneOf(TaskStatus.allCases.map(\.rawValue))) {
            .text($0.status.rawValue)
        },
        .init("team_id", .integer, replica: "INTEGER") { .integer($0.teamID) },
        .init("assignee_id", .integer, replica: "INTEGER", owner: .claimable) { .integer($0.assigneeID) },
        .init("location_id", .integer, replica: "INTEGER") { .integer($0.locationID) },
        .init("due_at", .date, replica: "INTEGER") { .date($0.dueAt) },
        .init("created_by", .integer) { .integer($0.createdBy) },
        .init("created_at", .date, replica: "INTEGER NOT NULL") { .date($0.createdAt) },
        .init("updated_at", .date, replica: "INTEGER NOT NULL") { .date($0.updatedAt) },
        .init("started_at", .date, replica: "INTEGER", owner: .field) { .date($0.startedAt) },
        .init("completed_at", .date, replica: "INTEGER", owner: .field) { .date($0.completedAt) },
        .init("completed_by", .integer, replica: "INTEGER", owner: .field) { .integer($0.completedBy) },
        .init("completion_note", .text, replica: "TEXT", owner: .field) { .text($0.completionNote) },
        // A replica keeps the master's version beside its own row_version.
        .init("version", .integer, replica: "INTEGER NOT NULL", replicaName: "master_version") { .integer(Int64($0.version)) },
        // Comma-separated, sorted; '' when none.
        .init(
            "required_skills", .text, master: "array_to_string(k.required_skills, ',')", replica: "TEXT NOT NULL DEFAULT ''",
            wire: .list(item: "^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$", most: Skills.mostPerTask),
            about: "skills whoever does the task must have, sorted; absent when none"
        ) { .text($0.requiredSkills.joined(separator: ",")) },
        .init(
            "window_start", .date, replica: "INTEGER",
            about:
                "start of the appointment window, \(TaskColumn.milliseconds); present with window_end or not at all (absent from servers before replica schema 3)"
        ) { .date($0.window?.start) },
        .init("window_end", .date, replica: "INTEGER", about: "end of the appointment window, \(TaskColumn.milliseconds)") {
            .date($0.window?.end)
        },
        // The IANA zone its times are read in (its site's, else its team's).
        .init(
            "time_zone", .text, replica: "TEXT NOT NULL DEFAULT 'UTC'", wire: .pattern("^[A-Za-z][A-Za-z0-9_+/-]{0,63}$"),
            about:
                "the IANA time zone the task's times are read in (its site's, else its team's): its due day, its window and which day is today; absent from servers before replica schema 5, which meant UTC"
        ) { .text($0.timeZone) },
        // The plan that made it and the plan's day it stands for (2026-12-07); NULL for a task made by hand.
        .init(
            "plan_id", .integer, replica: "INTEGER",
            about: "the recurring plan that made the task; absent for a task made by hand (and from servers before replica schema 6)"
        ) { .integer($0.planID) },
        .init(
            "plan_date", .text, master: "k.plan_date::text", replica: "TEXT", wire: .day,
            about: "the plan's day this task stands for (2026-12-07), on the task's wall clock; with plan_id"
        ) { .text($0.planDate?.description) },
        // The checklist version it carries (JSON of a ChecklistForm), NULL when none.
        .init(
            "checklist", .text, master: checklistForm, replica: "TEXT", wire: .checklist,
            about:
                "the checklist version the task carries (it keeps the version it got); absent when none and from servers before replica schema 7"
        ) { .text($0.checklist.map(FieldTask.json)) },
        // The latest answer per item ({"key": {"value", "by", "at"}}): worker-owned, as status is.
        .init(
            "answers", .answers, master: "k.answers::text", replica: "TEXT NOT NULL DEFAULT '{}'", owner: .field, wire: .answers,
            about:
                "the latest answer to each item of the checklist, as the field says (the master's once it has taken them); absent when none"
        ) { .text(FieldTask.json($0.answers)) },
        // When the day planner expects work to start, and its minutes on site.
        .init(
            "duration_minutes", .integer, replica: "INTEGER", shown: .init("on site", sv: "på plats", unit: "min"),
            about: "the minutes on site the plan counts on; absent when not said"
        ) { .integer($0.durationMinutes.map(Int64.init)) },
        .init("pinned", .bool) { .bool($0.pinned) },
        .init(
            "planned_start", .date, replica: "INTEGER",
            about:
                "when the day planner expects work to start (its ETA), \(TaskColumn.milliseconds); absent when not planned (and from servers before replica schema 8)"
        ) { .date($0.plannedStart) },
        // Customers never go to devices: their contact details stay on the master.
        .init("customer_id", .integer) { .integer($0.customerID) },
        // What the worker may know of the customer (docs/phone.md): a first name to greet, and how the
        // booked visit stands. Derived: they travel again whenever the appointment, the customer or the
        // site's customer changes (sql/0035_visits_reach_the_field.sql), and an erased customer's name goes.
        .init(
            "customer_first_name", .text, master: customerFirstName, replica: "TEXT", derived: true,
            about:
                "the first name of the task's customer (its own, else its site's), never contact details; absent when none or erased (and from servers before replica schema 11)"
        ) { .text($0.customerFirstName) },
        .init(
            "visit", .text, master: "(SELECT a.answer FROM appointments a WHERE a.task_id = k.id)", replica: "TEXT", derived: true,
            wire: .oneOf(["none", "confirmed", "move", "cancel"]),
            about:
                "how the customer answered the booked visit: none (not yet), confirmed, move (asked for another time), cancel; absent when no visit is booked"
        ) { .text($0.visit) },
        .init(
            "reference", .text, replica: "TEXT", manager: .line(bytes: 100), shown: .init("reference", sv: "referens"),
            about:
                "the customer's or the office's reference for the job (a work order or purchase order number): one line of at most 100 bytes of UTF-8; absent when none"
        ) { .text($0.reference) },
    ]

    /// The task's own customer, else its site's; the first word of their name, none once erased.
    static let customerFirstName = """
        (SELECT split_part(btrim(c.name), ' ', 1) FROM customers c \
        WHERE c.erased_at IS NULL AND c.id = coalesce(k.customer_id, (SELECT l.customer_id FROM locations l WHERE l.id = k.location_id)))
        """

    /// Where each column stands in ``columns``, by name.
    public static let position: [String: Int] = Dictionary(uniqueKeysWithValues: columns.enumerated().map { ($1.name, $0) })

    /// The columns a replica (and so a device) holds, in the order of its binary row and binds.
    public static let travelling: [TaskColumn] = columns.filter { $0.replica != nil }

    /// The checklist version task `k` carries, as the JSON of a ``ChecklistForm`` (NULL when none).
    public static let checklistForm = """
        CASE WHEN k.checklist_id IS NOT NULL THEN
            (SELECT jsonb_build_object('name', c.name, 'version', v.version, 'items', v.items)::text
               FROM checklist_versions v JOIN checklists c ON c.id = v.checklist_id
              WHERE v.checklist_id = k.checklist_id AND v.version = k.checklist_version) END
        """
}

/// One column of a task (see ``TaskSchema``).
public struct TaskColumn: Sendable {
    /// How its value is carried: the master's cell is decoded so, and a replica stores dates as
    /// milliseconds since 1970, booleans as 0 or 1, and answers as ``FieldTask/json(_:)`` writes them.
    public enum Kind: Sendable {
        case integer, text, date, bool
        /// JSON text that every writer of a replica writes the same way (the answers).
        case answers
    }

    /// Who writes it in a replica.
    public enum Owner: Sendable {
        /// The master: the generator overwrites it.
        case master
        /// The field (worker-owned): the replica keeps the master's value beside it as
        /// `master_<name>`, and the generator overwrites the field's only when the master's changed.
        case field
        /// The master, but a device's claim shows in it until the master answers: a refresh after a
        /// refusal looks at it as it does at the field's columns.
        case claimable
    }

    /// The master's column (`tasks.<name>`); its select names it `task_<name>`.
    public let name: String
    public let kind: Kind
    /// Its SQL over `tasks k` (by default `k.<name>`).
    public let master: String
    /// Its SQLite type in a replica; nil when it never leaves the master.
    public let replica: String?
    /// Its name in a replica (by default its name).
    public let replicaName: String
    public let owner: Owner
    /// Read from other tables than the task's row: it can change while the task's version does
    /// not, so a replica's copy is written again whenever it differs (not only on a new version).
    public let derived: Bool
    /// Its value in a task.
    public let value: @Sendable (FieldTask) -> TaskValue
    /// How it travels in a page of changes, under ``wireKey`` (see ``Wire``).
    public let wire: Wire
    /// What it means, for the readers of the protocol (docs/openapi.json says it).
    public let about: String?
    /// What a manager may set it to by its name (`teamwork-manager task create|update --set NAME=VALUE`, the
    /// board's task page, a task import's column of that name); nil: set in its own way, or never by hand.
    public let manager: Setting?
    /// How a device shows it, where nothing else does: `teamwork-worker show` and the phone's
    /// task page list such columns under their label; nil: shown in its own way, or not at all.
    public let shown: Label?

    /// How a column's value is written in a page of changes (JSON). Each form says how it is
    /// described in docs/openapi.json too.
    public enum Wire: Sendable, Equatable {
        /// By its kind: a number, a string, a boolean; a date as milliseconds since 1970 (UTC).
        case value
        /// A string, one of these.
        case oneOf([String])
        /// A string matching this pattern.
        case pattern(String)
        /// A day, `2026-12-07`.
        case day
        /// Stored comma-separated; a list of strings matching `item`, at most `most`, absent when empty.
        case list(item: String, most: Int)
        /// Stored as JSON text of a ``ChecklistForm``; the form itself.
        case checklist
        /// Stored as JSON text of the answers by item; a list of ``AnsweredItem``s, absent when empty.
        case answers
    }

    /// What a manager may give a column (``manager``).
    public enum Setting: Sendable, Equatable {
        /// One line of text, 1 to `bytes` bytes of UTF-8; empty clears it.
        case line(bytes: Int)
    }

    /// What a device calls a column it shows (``shown``): English, Swedish, and a unit after its value.
    public struct Label: Sendable, Equatable {
        public let english: String
        public let swedish: String
        public let unit: String?

        public init(_ english: String, sv swedish: String, unit: String? = nil) {
            (self.english, self.swedish, self.unit) = (english, swedish, unit)
        }
    }

    init(
        _ name: String, _ kind: Kind, master: String? = nil, replica: String? = nil, replicaName: String? = nil,
        owner: Owner = .master, derived: Bool = false, wire: Wire = .value, manager: Setting? = nil, shown: Label? = nil,
        about: String? = nil, value: @escaping @Sendable (FieldTask) -> TaskValue
    ) {
        self.manager = manager
        self.wire = wire
        self.shown = shown
        self.about = about
        self.derived = derived
        self.name = name
        self.kind = kind
        self.master = master ?? "k.\(name)"
        self.replica = replica
        self.replicaName = replicaName ?? name
        self.owner = owner
        self.value = value
    }

    /// The master's select of it: `<expression> AS task_<name>`.
    public var selected: String { "\(master) AS \(selectedName)" }

    /// What the master's select names it.
    public var selectedName: String { "task_\(name)" }

    /// Its key in a page of changes (snake_case, as every key of the protocol): its name in a replica.
    public var wireKey: String { replicaName }

    /// Every page of changes carries it (the replica holds it NOT NULL and from its first schema).
    public var wireRequired: Bool {
        guard let replica else { return false }
        return replica.contains("PRIMARY KEY") || (replica.contains("NOT NULL") && !replica.contains("DEFAULT"))
    }

    /// The value as a replica stores it: what `verify` compares.
    public func stored(_ value: TaskValue) -> TaskValue {
        switch value {
        case .date(let date?): .integer(date.millisecondsSince1970)
        case .bool(let flag?): .integer(flag ? 1 : 0)
        case .date(nil), .bool(nil), .integer(nil), .text(nil): .null
        case .null, .integer, .text: value
        }
    }

    /// The value a replica stored, as the task's (the reverse of ``stored(_:)``).
    public func fromReplica(integer: Int64?, text: String?) -> TaskValue {
        switch kind {
        case .integer: .integer(integer)
        case .text, .answers: .text(text)
        case .date: .date(integer.map { Date(millisecondsSince1970: $0) })
        case .bool: .bool(integer.map { $0 != 0 })
        }
    }
}

/// A task's value in one column, as its ``TaskColumn/kind`` says.
public enum TaskValue: Sendable, Equatable {
    case null
    case integer(Int64?)
    case text(String?)
    case date(Date?)
    case bool(Bool?)

    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    public var text: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    public var date: Date? {
        if case .date(let value) = self { return value }
        return nil
    }

    public var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }
}

extension FieldTask {
    /// A task from its columns' values (by the master's column name; ``TaskValue/null`` for a
    /// column not there, as in a replica of an older schema). A value that does not parse (an
    /// unknown status, a window ending before it starts, JSON that is not a checklist) throws;
    /// `lenient` (reading a replica back, whose damage `verify` names by column) takes it as absent.
    public init(values value: (String) -> TaskValue, lenient: Bool = false) throws {
        func required<T>(_ name: String, _ read: (TaskValue) -> T?) throws -> T {
            guard let found = read(value(name)) else { throw TeamworkError(.internal, "a task without its \(name)") }
            return found
        }
        func parsed<T>(_ parse: () throws -> T?) throws -> T? {
            guard lenient else { return try parse() }
            return (try? parse()) ?? nil
        }
        func known<E: RawRepresentable>(_ name: String, fallback: E) throws -> E where E.RawValue == String {
            let raw = try required(name, \.text)
            if let known = E(rawValue: raw) { return known }
            if lenient { return fallback }
            throw TeamworkError(.internal, "unexpected \(E.self) value in the database")
        }
        let start = value("window_start").date, end = value("window_end").date
        let skills = value("required_skills").text ?? ""
        self.init(
            id: try required("id", \.integer),
            title: try required("title", \.text),
            description: try required("description", \.text),
            priority: try known("priority", fallback: Priority.normal),
            status: try known("status", fallback: TaskStatus.open),
            teamID: value("team_id").integer,
            assigneeID: value("assignee_id").integer,
            locationID: value("location_id").integer,
            dueAt: value("due_at").date,
            createdBy: value("created_by").integer,
            createdAt: try required("created_at", \.date),
            updatedAt: try required("updated_at", \.date),
            startedAt: value("started_at").date,
            completedAt: value("completed_at").date,
            completedBy: value("completed_by").integer,
            completionNote: value("completion_note").text,
            version: Int(try required("version", \.integer)),
            requiredSkills: skills.isEmpty ? [] : skills.split(separator: ",").map(String.init),
            window: try parsed { try start.flatMap { start in try end.map { try TimeWindow(start: start, end: $0) } } },
            timeZone: value("time_zone").text ?? "UTC",
            planID: value("plan_id").integer,
            planDate: try parsed { try value("plan_date").text.map { try LocalDate(parsing: $0) } },
            checklist: try parsed { try FieldTask.checklist(json: value("checklist").text) },
            answers: try parsed { try FieldTask.answers(json: value("answers").text) } ?? [:],
            durationMinutes: value("duration_minutes").integer.map(Int.init),
            pinned: value("pinned").bool ?? false,
            plannedStart: value("planned_start").date,
            customerID: value("customer_id").integer,
            customerFirstName: value("customer_first_name").text,
            visit: value("visit").text
        )
        reference = value("reference").text
    }
}
