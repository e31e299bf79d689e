import Foundation
import PostgresNIO
import TeamworkFormats
import TeamworkModel

extension CentralStore {
    static let partColumns =
        "p.id, p.code, p.name, p.unit, p.unit_price::text, p.currency, p.retired_at, p.created_at, p.updated_at"

    /// Adds a part to the catalogue; a code already there (whatever its case) is a conflict.
    public func addPart(_ new: NewPart) async throws -> Part {
        try await transaction { connection in
            try await Self.insert(new, connection, actor: actorID, logger: logger)
        }
    }

    /// The catalogue by code; retired parts only with `retired`.
    public func listParts(retired: Bool = false) async throws -> [Part] {
        try await rows(
            """
            SELECT \(unescaped: Self.partColumns) FROM parts p
            WHERE \(retired) OR p.retired_at IS NULL ORDER BY lower(p.code)
            """
        ).map(Part.init(row:))
    }

    /// A part by its code, whatever its case.
    public func part(code: String) async throws -> Part {
        guard let row = try await rows("SELECT \(unescaped: Self.partColumns) FROM parts p WHERE lower(p.code) = lower(\(code))").first
        else { throw TeamworkError.notFound("no part with code '\(TerminalText.inline(String(code.prefix(40))))'") }
        return try Part(row: row)
    }

    /// Changes a part's name, unit or price (`nil` leaves each as it is; a price of "" removes it),
    /// or retires it (kept for the jobs that used it, no longer offered) or brings it back.
    public func updatePart(
        code: String, name: String? = nil, unit: String? = nil, price: (String?, String?)? = nil, retired: Bool? = nil
    ) async throws -> Part {
        let current = try await part(code: code)
        let changed = try NewPart(
            code: current.code, name: name ?? current.name, unit: unit ?? current.unit.rawValue,
            unitPrice: price.map { $0.0 ?? "" } ?? current.unitPrice, currency: price.map { $0.1 ?? "" } ?? current.currency)
        return try await transaction { connection in
            let rows = try await connection.query(
                """
                UPDATE parts p SET name = \(changed.name), unit = \(changed.unit.rawValue),
                    unit_price = \(changed.unitPrice)::numeric, currency = \(changed.currency),
                    retired_at = CASE WHEN \(retired)::boolean IS NULL THEN p.retired_at
                                      WHEN \(retired) THEN coalesce(p.retired_at, now()) END
                WHERE p.id = \(current.id)
                RETURNING \(unescaped: Self.partColumns)
                """, logger: logger
            ).collect()
            return try Part(row: rows[0])
        }
    }

    /// The columns of a parts CSV file; `code`, `name` and `unit` are required.
    public static let partImportColumns = ["code", "name", "unit", "price", "currency"]

    /// A CSV import of the catalogue, all or nothing: each line a new part, or a change of the part
    /// with its code; the first bad line stops it with an error naming it, and nothing is written.
    /// Returns how many were added and changed.
    public func importParts(csv text: String) async throws -> (added: Int, changed: Int) {
        let table: CSVTable
        do { table = try CSVTable(parsing: text) } catch let error as CSVError { throw TeamworkError.invalid(error.description) }
        if let column = table.header.first(where: { !Self.partImportColumns.contains($0) }) {
            throw TeamworkError.invalid(
                "line 1: unknown column '\(TerminalText.inline(String(column.prefix(40))))'; the columns are \(Self.partImportColumns.joined(separator: ", "))"
            )
        }
        for required in ["code", "name", "unit"] where !table.header.contains(required) {
            throw TeamworkError.invalid("line 1: the header needs a '\(required)' column")
        }
        var parts: [NewPart] = []
        var seen: Set<String> = []
        for record in table.records {
            func field(_ name: String) -> String? {
                table.header.firstIndex(of: name).flatMap { $0 < record.fields.count ? record.fields[$0] : nil }
            }
            do {
                let part = try NewPart(
                    code: field("code") ?? "", name: field("name") ?? "", unit: field("unit") ?? "", unitPrice: field("price"),
                    currency: field("currency"))
                guard seen.insert(part.code.lowercased()).inserted else {
                    throw TeamworkError.invalid("code '\(part.code)' is on an earlier line too")
                }
                parts.append(part)
            } catch let error as TeamworkError {
                throw TeamworkError.invalid("line \(record.line): \(error.message)")
            }
        }
        return try await transaction { connection in
            var (added, changed) = (0, 0)
            for new in parts {
                let updated = try await connection.query(
                    """
                    UPDATE parts p SET name = \(new.name), unit = \(new.unit.rawValue), unit_price = \(new.unitPrice)::numeric,
                        currency = \(new.currency)
                    WHERE lower(p.code) = lower(\(new.code)) RETURNING p.id
                    """, logger: logger
                ).collect()
                if updated.isEmpty {
                    _ = try await Self.insert(new, connection, actor: actorID, logger: logger)
                    added += 1
                } else {
                    changed += 1
                }
            }
            return (added, changed)
        }
    }

    /// The catalogue as CSV, as `importParts(csv:)` reads it back (formula-safe: CSVTable.render).
    public func exportParts(retired: Bool = false) async throws -> String {
        let parts = try await listParts(retired: retired)
        return CSVTable.render(
            [Self.partImportColumns] + parts.map { [$0.code, $0.name, $0.unit.rawValue, $0.unitPrice ?? "", $0.currency ?? ""] })
    }

    static func insert(_ new: NewPart, _ connection: PostgresConnection, actor: Int64?, logger: Logger) async throws -> Part {
        do {
            let rows = try await connection.query(
                """
                INSERT INTO parts AS p (code, name, unit, unit_price, currency, created_by)
                VALUES (\(new.code), \(new.name), \(new.unit.rawValue), \(new.unitPrice)::numeric, \(new.currency), \(actor))
                RETURNING \(unescaped: partColumns)
                """, logger: logger
            ).collect()
            return try Part(row: rows[0])
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            throw TeamworkError.conflict(
                "a part with code '\(new.code)' is in the catalogue already (codes are unique whatever their case)")
        }
    }
}

extension Part {
    init(row: PostgresRow) throws {
        let (id, code, name, unit, price, currency, retired, created, updated) = try row.decode(
            (Int64, String, String, String, String?, String?, Date?, Date, Date).self)
        self.init(
            id: id, code: code, name: name, unit: Part.Unit(rawValue: unit) ?? .piece, unitPrice: price.map(Self.trimmed),
            currency: currency, retiredAt: retired, createdAt: created, updatedAt: updated)
    }

    /// `12.5000` as the master keeps it, as a person writes it: `12.50`, `3`.
    static func trimmed(_ price: String) -> String {
        guard let point = price.firstIndex(of: ".") else { return price }
        var text = price
        while text.hasSuffix("0"), text.distance(from: point, to: text.endIndex) > 3 { text.removeLast() }
        if text.hasSuffix(".00") { text.removeLast(3) }
        return text
    }
}

extension CentralStore {
    /// What was used on task `id` (sql/0037), by part code then description: the catalogue's name
    /// (a line's description), the unit and price of the day it was recorded, the line's total.
    public func materials(ofTask id: Int64) async throws -> [MaterialLine] {
        _ = try await task(id: id)
        return try await rows(
            """
            SELECT \(unescaped: Self.materialColumns) FROM \(unescaped: Self.materialJoins)
            WHERE m.task_id = \(id) AND m.quantity > 0
            ORDER BY p.code IS NULL, lower(p.code), lower(m.description), m.person_id
            """
        ).map { try MaterialLine(row: PostgresRandomAccessRow($0)) }
    }

    /// A line of `task_materials m` as ``MaterialLine`` reads it (with `parts p` and `people w` joined).
    static let materialColumns = """
        p.code AS part_code, coalesce(p.name, m.description) AS line_name, m.unit, trim_scale(m.quantity)::text AS quantity,
        trim_scale(m.unit_price)::text AS unit_price, m.currency, round(m.quantity * m.unit_price, 2)::text AS total, m.person_id,
        nullif(btrim(w.first_name || ' ' || w.last_name), '') AS person_name, m.recorded_at
        """
    static let materialJoins = "task_materials m LEFT JOIN parts p ON p.id = m.part_id LEFT JOIN people w ON w.id = m.person_id"
}

extension MaterialLine {
    init(row r: PostgresRandomAccessRow) throws {
        self.init(
            partCode: try r["part_code"].decode(String?.self), name: try r["line_name"].decode(String.self),
            unit: try r["unit"].decode(String?.self), quantity: try r["quantity"].decode(String.self),
            unitPrice: try r["unit_price"].decode(String?.self), currency: try r["currency"].decode(String?.self),
            total: try r["total"].decode(String?.self), personID: try r["person_id"].decode(Int64.self),
            personName: try r["person_name"].decode(String?.self), recordedAt: try r["recorded_at"].decode(Date.self))
    }
}

extension CentralStore {
    /// Every line used on tasks completed from `from` to `to` (both days, each task on its own
    /// clock), of team `team` when given: what invoicing and stock read (`report materials`).
    public func materialsUsed(from: LocalDate, to: LocalDate, team: Int64? = nil) async throws -> [MaterialUse] {
        try Self.checkPeriod(from, to)
        return try await rows(
            """
            SELECT d.task_id, d.title, d.team, d.customer, d.completed_on::text, \(unescaped: Self.materialColumns)
            FROM teamwork_completed_tasks(\(from.description)::date, \(to.description)::date, \(team)::bigint) d
                 JOIN (\(unescaped: Self.materialJoins)) ON m.task_id = d.task_id
            WHERE m.quantity > 0
            ORDER BY d.completed_at, d.task_id, p.code IS NULL, lower(p.code), lower(m.description), m.person_id
            """
        ).map { row in
            let r = PostgresRandomAccessRow(row)
            return MaterialUse(
                taskID: try r["task_id"].decode(Int64.self), title: try r["title"].decode(String.self),
                team: try r["team"].decode(String?.self), customer: try r["customer"].decode(String?.self),
                completedOn: try r["completed_on"].decode(String.self), line: try MaterialLine(row: r))
        }
    }
}

extension CentralStore {
    /// Sets, as the acting manager, `person`'s line on task `taskID` for part `part` (its code) or
    /// the line described `description`, to `quantity` (0 removes it): a correction, completed
    /// tasks included, in the task's history with the manager's name; a completed task's costs go
    /// to billing again (`task.costed`). Returns the task's lines after it.
    public func correctMaterial(
        taskID: Int64, personID: Int64, part: String?, description: String?, quantity: String
    ) async throws -> [MaterialLine] {
        if let problem = Material.quantityProblem(quantity) { throw TeamworkError.invalid(problem) }
        switch (part, description) {
        case (let part?, nil):
            guard NewPart.isCode(part) else {
                throw TeamworkError.invalid("a part's code is 1 to 40 letters, digits, '.', '_', '/' or '-'")
            }
        case (nil, let description?):
            if let problem = Material.descriptionProblem(description) { throw TeamworkError.invalid(problem) }
        default:
            throw TeamworkError.invalid("name a part or describe a line (--line), not both")
        }
        try await transaction { connection in
            // Collected: an error the function raises comes with its rows.
            _ = try await connection.query(
                "SELECT teamwork_correct_material(\(taskID), \(personID), \(part), \(description), \(quantity))", logger: logger
            ).collect()
        }
        return try await materials(ofTask: taskID)
    }
}

extension CentralStore {
    /// A report's period: `from` not after `to`, at most 366 days.
    static func checkPeriod(_ from: LocalDate, _ to: LocalDate) throws {
        guard from <= to else { throw TeamworkError.invalid("--from must not be after --to") }
        guard to.dayNumber - from.dayNumber < 366 else { throw TeamworkError.invalid("a report covers at most 366 days") }
    }
}
