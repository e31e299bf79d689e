import Foundation
import PostgresNIO
import TeamworkModel

/// A checklist and what became of it: its latest version and how many tasks carry one of its versions.
public struct ChecklistSummary: Sendable, Equatable, Codable {
    public var name: String
    public var latestVersion: Int
    public var items: Int
    public var tasks: Int
    public var updatedAt: Date
}

/// One task's answers to its checklist, for billing and audits (`checklist export`).
public struct ChecklistRecord: Sendable, Equatable {
    public var task: FieldTask
    /// Display names by person id, for who answered.
    public var names: [Int64: String]
}

extension CentralStore {
    /// Publishes `items` as checklist `name`: version 1 of a new checklist, or, with `existing`, the
    /// next version of one that exists (its published versions never change). Items equal to the
    /// latest version's publish nothing and return that version.
    @discardableResult
    public func publishChecklist(name: String, items: [ChecklistItem], existing: Bool) async throws -> ChecklistForm {
        if let problem = ChecklistForm.problem(name: name, items: items) { throw TeamworkError.invalid(problem) }
        let json = String(decoding: try JSONEncoder().encode(items), as: UTF8.self)
        return try await transaction { connection in
            // One publisher of a name at a time (a lock of the name, not of the row: managers may not update checklists).
            _ = try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended('checklist ' || \(name), 0))", logger: logger)
                .collect()
            let found = try await connection.query("SELECT id FROM checklists WHERE name = \(name)", logger: logger)
                .collect().first.map { try $0.decode(Int64.self) }
            let id: Int64
            switch (found, existing) {
            case (nil, false):
                let rows = try await connection.query(
                    "INSERT INTO checklists (name, created_by) VALUES (\(name), \(actorID)) RETURNING id", logger: logger
                ).collect()
                id = try rows[0].decode(Int64.self)
            case (let found?, true):
                id = found
                let latest = try await connection.query(
                    """
                    SELECT version, items::text FROM checklist_versions WHERE checklist_id = \(id) ORDER BY version DESC LIMIT 1
                    """, logger: logger
                ).collect().first
                if let latest, let (version, stored) = try? latest.decode((Int, String).self),
                    (try? JSONDecoder().decode([ChecklistItem].self, from: Data(stored.utf8))) == items
                {
                    return ChecklistForm(name: name, version: version, items: items)
                }
            case (nil, true):
                throw TeamworkError.notFound("no checklist named '\(TerminalText.inline(name))'; add it first")
            case (.some, false):
                throw TeamworkError.conflict("a checklist named '\(TerminalText.inline(name))' exists; update it to publish a new version")
            }
            let rows = try await connection.query(
                """
                INSERT INTO checklist_versions (checklist_id, version, items, created_by)
                SELECT \(id), coalesce(max(version), 0) + 1, \(json)::jsonb, \(actorID)
                  FROM checklist_versions WHERE checklist_id = \(id)
                RETURNING version
                """, logger: logger
            ).collect()
            return ChecklistForm(name: name, version: try rows[0].decode(Int.self), items: items)
        }
    }

    /// Every checklist with its latest version, by name.
    public func checklists() async throws -> [ChecklistSummary] {
        try await rows(
            """
            SELECT c.name, v.version, jsonb_array_length(v.items), v.created_at,
                   (SELECT count(*)::int FROM tasks k WHERE k.checklist_id = c.id)
              FROM checklists c
              JOIN LATERAL (SELECT * FROM checklist_versions x WHERE x.checklist_id = c.id ORDER BY x.version DESC LIMIT 1) v ON true
             ORDER BY c.name
            """
        ).map { row in
            let (name, version, items, updated, tasks) = try row.decode((String, Int, Int, Date, Int).self)
            return ChecklistSummary(name: name, latestVersion: version, items: items, tasks: tasks, updatedAt: updated)
        }
    }

    /// Checklist `name` as published in `version` (its latest when nil).
    public func checklist(named name: String, version: Int? = nil) async throws -> ChecklistForm {
        let found = try await rows(
            """
            SELECT v.version, v.items::text FROM checklists c JOIN checklist_versions v ON v.checklist_id = c.id
             WHERE c.name = \(name) AND (\(version)::integer IS NULL OR v.version = \(version))
             ORDER BY v.version DESC LIMIT 1
            """
        ).first
        guard let found else {
            throw TeamworkError.notFound(
                version.map { "checklist '\(TerminalText.inline(name))' has no version \($0)" }
                    ?? "no checklist named '\(TerminalText.inline(name))'")
        }
        let (number, items) = try found.decode((Int, String).self)
        return ChecklistForm(name: name, version: number, items: try JSONDecoder().decode([ChecklistItem].self, from: Data(items.utf8)))
    }

    /// The id and latest version of checklist `name`, for a task or a plan to carry.
    func latestChecklistVersion(named name: String, on connection: PostgresConnection) async throws -> (id: Int64, version: Int) {
        let found = try await connection.query(
            """
            SELECT c.id, max(v.version) FROM checklists c JOIN checklist_versions v ON v.checklist_id = c.id
             WHERE c.name = \(name) GROUP BY c.id
            """, logger: logger
        ).collect().first
        guard let found else { throw TeamworkError.notFound("no checklist named '\(TerminalText.inline(name))'") }
        let (id, version) = try found.decode((Int64, Int).self)
        return (id, version)
    }

    /// Tasks carrying any version of checklist `name` and completed at or after `since` (every
    /// completed one when nil), oldest completion first, with the names of who answered.
    public func checklistRecords(named name: String, completedSince since: Date?) async throws -> [ChecklistRecord] {
        _ = try await checklist(named: name)
        let tasks = try await rows(
            """
            SELECT \(unescaped: Columns.task) FROM tasks k JOIN checklists c ON c.id = k.checklist_id
             WHERE c.name = \(name) AND k.status = 'completed'
               AND (\(since)::timestamptz IS NULL OR k.completed_at >= \(since))
             ORDER BY k.completed_at, k.id
            """
        ).map(FieldTask.init(row:))
        let people = Set(tasks.flatMap { $0.answers.values.map(\.by) } + tasks.compactMap(\.completedBy))
        let names = try await self.people(ids: Array(people)).reduce(into: [Int64: String]()) { $0[$1.id] = $1.displayName }
        return tasks.map { ChecklistRecord(task: $0, names: names) }
    }
}
