import Foundation
import PostgresNIO
import TeamworkFormats
import TeamworkModel

extension CentralStore {
    /// The columns a task CSV file may have; `title` is required, and each row
    /// needs a `team`, an `assignee`, or both. `location` is a site's id or its name;
    /// `checklist` a checklist's name (its latest version); `duration` minutes on site (1 to 720);
    /// `customer` a customer's id or email (else the site's customer hears of it).
    /// And each column a manager sets by name (``DeclaredValues``), under its name.
    public static let taskImportColumns =
        [
            "title", "description", "priority", "team", "assignee", "location", "due", "requires", "window", "checklist",
            "duration", "customer",
        ] + DeclaredValues.settable.map(\.name)

    /// Creates every task in the CSV text, or none: the first bad row stops the
    /// import with an error that names its line and column, and nothing is written.
    /// `holdMessages`: the customers' messages of the imported tasks wait, each day and team the
    /// import touches held (sql/0032), until the dispatcher releases them (``releaseMessages(day:teamID:)``).
    public func importTasks(csv text: String, holdMessages: Bool = false) async throws -> [FieldTask] {
        let table: CSVTable
        do {
            table = try CSVTable(parsing: text)
        } catch let error as CSVError {
            throw TeamworkError.invalid(error.description)
        }
        let unknown = table.header.filter { !Self.taskImportColumns.contains($0) }
        if let column = unknown.first {
            throw TeamworkError.invalid(
                "line 1: unknown column '\(column)'; the columns are \(Self.taskImportColumns.joined(separator: ", "))"
            )
        }
        guard table.header.contains("title") else { throw TeamworkError.invalid("line 1: the header needs a 'title' column") }
        let directory = try await ImportDirectory.load(self)
        var tasks: [(line: Int, task: NewTask)] = []
        for record in table.records {
            tasks.append((record.line, try directory.task(from: record, header: table.header)))
        }
        return try await transaction { connection in
            if holdMessages {
                _ = try await connection.query("SELECT teamwork_mark('hold_messages', 'held by an import')", logger: logger).collect()
            }
            var created: [FieldTask] = []
            created.reserveCapacity(tasks.count)
            for (line, task) in tasks {
                do {
                    created.append(try await insertTask(task, on: connection))
                } catch {
                    let mapped = StoreError.map(error)
                    let message = (mapped as? TeamworkError)?.message ?? "\(mapped)"
                    throw TeamworkError(.invalidInput, "line \(line): \(message)")
                }
            }
            return created
        }
    }
}

/// Slugs, emails, memberships and locations, loaded once so each CSV row is
/// checked without a query of its own.
struct ImportDirectory {
    var teams: [String: Int64]
    var teamIDs: Set<Int64>
    var people: [String: Int64]
    var personIDs: Set<Int64>
    var memberships: Set<[Int64]>
    var locations: Set<Int64>
    /// Sites by their name, lowercased: more than one id when several share it.
    var locationNames: [String: [Int64]] = [:]
    /// Customers by id, and by email lowercased.
    var customers: [String: Int64] = [:]
    /// The zone each team, site (when it has its own) and person (their default team's) gives a task,
    /// by sql/functions/tasks_time_zone.sql itself: `due` and `window` are read on the task's wall clock.
    var zones: [String: String] = [:]

    /// The zone a task of this row will have: its location's, else its team's, else its assignee's.
    func zone(location: Int64?, team: Int64?, assignee: Int64?) -> Zone {
        let name = location.flatMap { zones["l\($0)"] } ?? team.flatMap { zones["t\($0)"] } ?? assignee.flatMap { zones["p\($0)"] }
        return name.flatMap { try? Zone($0) } ?? .utc
    }

    static func load(_ store: CentralStore) async throws -> ImportDirectory {
        var directory = ImportDirectory(teams: [:], teamIDs: [], people: [:], personIDs: [], memberships: [], locations: [])
        for row in try await store.rows(
            """
            SELECT 't' || id, teamwork_task_time_zone(NULL, id, NULL) FROM teams
            UNION ALL SELECT 'l' || id, time_zone FROM locations WHERE time_zone IS NOT NULL
            UNION ALL SELECT 'p' || p.id, teamwork_task_time_zone(NULL, NULL, p.id) FROM people p WHERE p.default_team_id IS NOT NULL
            """)
        {
            let (key, zone) = try row.decode((String, String).self)
            directory.zones[key] = zone
        }
        for row in try await store.rows("SELECT id, slug FROM teams") {
            let (id, slug) = try row.decode((Int64, String).self)
            directory.teams[slug] = id
            directory.teamIDs.insert(id)
        }
        for row in try await store.rows("SELECT id, lower(email) FROM people") {
            let (id, email) = try row.decode((Int64, String).self)
            directory.people[email] = id
            directory.personIDs.insert(id)
        }
        for row in try await store.rows("SELECT team_id, person_id FROM team_memberships") {
            let (team, person) = try row.decode((Int64, Int64).self)
            directory.memberships.insert([team, person])
        }
        for row in try await store.rows("SELECT id, lower(email) FROM customers WHERE erased_at IS NULL") {
            let (id, email) = try row.decode((Int64, String?).self)
            directory.customers[String(id)] = id
            if let email { directory.customers[email] = id }
        }
        for row in try await store.rows("SELECT id, lower(name) FROM locations") {
            let (id, name) = try row.decode((Int64, String).self)
            directory.locations.insert(id)
            directory.locationNames[name, default: []].append(id)
        }
        return directory
    }

    func task(from record: CSVTable.Record, header: [String]) throws -> NewTask {
        var values: [String: String] = [:]
        for (column, value) in zip(header, record.fields) { values[column] = value }
        func fail(_ column: String, _ message: String) -> TeamworkError {
            TeamworkError.invalid("line \(record.line), column '\(column)': \(message)")
        }
        func nonEmpty(_ column: String) -> String? {
            guard let value = values[column]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
            return value
        }
        func checked<T>(_ column: String, _ body: () throws -> T) throws -> T {
            do { return try body() } catch let error as TeamworkError { throw fail(column, error.message) }
        }

        var teamID: Int64?
        if let team = nonEmpty("team") {
            teamID = Int64(team).flatMap { teamIDs.contains($0) ? $0 : nil } ?? teams[team]
            if teamID == nil { throw fail("team", "no team '\(team)'") }
        }
        var assigneeID: Int64?
        if let assignee = nonEmpty("assignee") {
            assigneeID = Int64(assignee).flatMap { personIDs.contains($0) ? $0 : nil } ?? people[assignee.lowercased()]
            if assigneeID == nil { throw fail("assignee", "no such person") }
        }
        if let teamID, let assigneeID, !memberships.contains([teamID, assigneeID]) {
            throw fail("assignee", "the assignee is not a member of that team")
        }
        let assignment = try checked("team") { try Assignment(teamID: teamID, assigneeID: assigneeID) }
        var locationID: Int64?
        if let location = nonEmpty("location") {
            if let id = Int64(location), locations.contains(id) {
                locationID = id
            } else {
                let named = locationNames[location.lowercased()] ?? []
                guard !named.isEmpty else { throw fail("location", "no site named or numbered '\(TerminalText.inline(location))'") }
                guard named.count == 1 else {
                    throw fail(
                        "location", "\(named.count) sites are named '\(TerminalText.inline(location))': give one's id (location list)")
                }
                locationID = named[0]
            }
        }
        let priority = try checked("priority") { try nonEmpty("priority").map(Priority.parse) ?? .normal }
        let zone = zone(location: locationID, team: teamID, assignee: assigneeID)
        let due = try checked("due") { try nonEmpty("due").map { try ISODate.parse($0, field: "due", in: zone) } }
        let requires = try checked("requires") {
            try Skills.parse(values["requires"] ?? "", most: Skills.mostPerTask, field: "requires")
        }
        let window = try checked("window") { try nonEmpty("window").map { try TimeWindow.parse($0, in: zone) } }
        let duration = try checked("duration") {
            try nonEmpty("duration").map { text in
                guard let minutes = Int(text) else { throw TeamworkError.invalid("duration must be whole minutes, like 45") }
                return try Validate.durationMinutes(minutes)
            }
        }
        var customerID: Int64?
        if let customer = nonEmpty("customer") {
            customerID = customers[customer.lowercased()]
            if customerID == nil { throw fail("customer", "no such customer (an id or an email)") }
        }
        var declared = DeclaredValues()
        for column in DeclaredValues.settable {
            if let value = values[column.name] { try checked(column.name) { try declared.set(column.name, to: value) } }
        }
        var task = try checked("title") {
            try NewTask(
                title: values["title"] ?? "", description: values["description"] ?? "", priority: priority,
                assignment: assignment, locationID: locationID, dueAt: due, requiredSkills: requires, window: window,
                checklist: nonEmpty("checklist"), durationMinutes: duration, customerID: customerID
            )
        }
        task.declared = declared
        return task
    }
}
