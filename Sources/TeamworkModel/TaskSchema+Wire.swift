import Foundation

/// A task on the wire, from ``TaskSchema`` alone: the columns that travel, each under its ``TaskColumn/wireKey``
/// and in its ``TaskColumn/Wire`` form. A page of changes (`ChangePage.Task`), the device's copy, the phone's
/// field list (`fields.js`) and the task object of docs/openapi.json follow from here (`scripts/declare`
/// writes the last two; a test compares them).
extension TaskSchema {
    /// `task` as a device may know it: the columns that travel, the others absent.
    public static func travelled(_ task: FieldTask) -> FieldTask {
        (try? FieldTask(values: { name in position[name].map { columns[$0] }.flatMap { $0.replica == nil ? nil : $0.value(task) } ?? .null }
        ))
            ?? task
    }

    /// The travelling columns and their keys as the model spells them (an encoder that converts to snake_case
    /// writes each column's wire key; the protocol's decoder reads it back so).
    static let wireKeys: [(column: TaskColumn, key: TeamworkJSON.Key)] = travelling.map {
        ($0, TeamworkJSON.Key(TeamworkJSON.propertyName($0.wireKey)))
    }

    /// Writes the travelling columns of `task` into `container`. An absent value, an empty list or no answers are
    /// left out. The checklist and the answers are written from the task's own values (no JSON text between).
    public static func encode(_ task: FieldTask, into container: inout KeyedEncodingContainer<TeamworkJSON.Key>) throws {
        for (column, key) in wireKeys {
            switch column.wire {
            case .checklist: try container.encodeIfPresent(task.checklist, forKey: key)
            case .answers: if !task.answers.isEmpty { try container.encode(AnsweredItem.list(task.answers), forKey: key) }
            case .list:
                if case .text(let text?) = column.value(task), !text.isEmpty {
                    try container.encode(text.split(separator: ",").map(String.init), forKey: key)
                }
            case .value, .oneOf, .pattern, .day:
                switch column.value(task) {
                case .integer(let value): try container.encodeIfPresent(value, forKey: key)
                case .text(let value): try container.encodeIfPresent(value, forKey: key)
                case .date(let value): try container.encodeIfPresent(value?.millisecondsSince1970, forKey: key)
                case .bool(let value): try container.encodeIfPresent(value, forKey: key)
                case .null: break
                }
            }
        }
    }

    /// A task from the travelling columns in `container` (a column it lacks reads as absent, as from an older
    /// server). A value of the wrong type, or a task without a column every page carries, throws a decoding error.
    public static func decode(from container: KeyedDecodingContainer<TeamworkJSON.Key>) throws -> FieldTask {
        var values: [String: TaskValue] = [:]
        var checklist: ChecklistForm?
        var answers: [AnsweredItem] = []
        for (column, key) in wireKeys {
            switch (column.wire, column.kind) {
            case (.checklist, _): checklist = try container.decodeIfPresent(ChecklistForm.self, forKey: key)
            case (.answers, _): answers = try container.decodeIfPresent([AnsweredItem].self, forKey: key) ?? []
            case (.list, _): values[column.name] = .text(try container.decodeIfPresent([String].self, forKey: key)?.joined(separator: ","))
            case (_, .integer): values[column.name] = .integer(try container.decodeIfPresent(Int64.self, forKey: key))
            case (_, .text), (_, .answers): values[column.name] = .text(try container.decodeIfPresent(String.self, forKey: key))
            case (_, .date):
                values[column.name] = .date(try container.decodeIfPresent(Int64.self, forKey: key).map { Date(millisecondsSince1970: $0) })
            case (_, .bool): values[column.name] = .bool(try container.decodeIfPresent(Bool.self, forKey: key))
            }
        }
        do {
            var task = try FieldTask(values: { values[$0] ?? .null }, lenient: true)
            task.checklist = checklist
            task.answers = AnsweredItem.answers(answers)
            return task
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: container.codingPath, debugDescription: "\(error)"))
        }
    }
}

extension FieldTask {
    /// The columns the declaration says are shown by their label (``TaskColumn/shown``) that have a value, label
    /// and value as a person reads them (a date on the task's clock, the unit after a number): what
    /// `teamwork-worker show`, the phone and the board list.
    public var shownColumns: [(label: String, value: String)] {
        TaskSchema.columns.compactMap { column in
            guard let label = column.shown else { return nil }
            let text: String? =
                switch column.value(self) {
                case .integer(let value): value.map(String.init)
                case .text(let value): value
                case .date(let value): value.map { zone.format($0) }
                case .bool(let value): value.map { $0 ? "yes" : "no" }
                case .null: nil
                }
            return text.map { (label.english, $0 + (label.unit.map { " \($0)" } ?? "")) }
        }
    }
}

extension TaskColumn {
    /// How a date travels, as the protocol's readers are told.
    public static let milliseconds = "milliseconds since 1970-01-01 UTC"
}
