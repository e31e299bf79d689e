import Foundation
import GRDB
import TeamworkModel

/// How a replica's `tasks` rows are read back as ``FieldTask``s, derived from ``TaskSchema``:
/// the one reader of a task row, for what `verify` compares (``ReplicaContents``) and for the
/// pages devices pull (``ChangePage``).
struct ReplicaTaskReader {
    /// The select list: each column ``ReplicaSchema/taskColumns`` declares (without the master's
    /// copies of the field's columns when only ``asTheFieldSays(_:)`` reads the rows), `NULL` for one
    /// an older file lacks (its defaults then), and `row_version`.
    let selected: String

    init(_ db: Database, fieldOnly: Bool = false) throws {
        let has = Set(try db.columns(in: "tasks").map(\.name))
        let copies = fieldOnly ? Set(TaskSchema.travelling.filter { $0.owner == .field }.map { "master_\($0.replicaName)" }) : []
        let columns = ReplicaSchema.taskColumns.filter { !copies.contains($0.name) }
        selected =
            (columns.map { has.contains($0.name) ? $0.name : "NULL AS \($0.name)" } + ["row_version"]).joined(separator: ", ")
    }

    /// A column's value in `row` as the master last said it (`master_<column>` for the field's
    /// columns) or, with `field`, as the field says; `.null` for a column that does not travel.
    static func value(_ row: Row, _ name: String, field: Bool) -> TaskValue {
        guard let column = TaskSchema.position[name].map({ TaskSchema.columns[$0] }), column.replica != nil else { return .null }
        let stored = column.owner == .field && !field ? "master_\(column.replicaName)" : column.replicaName
        switch column.kind {
        case .text, .answers: return column.fromReplica(integer: nil, text: row[stored])
        case .integer, .date, .bool: return column.fromReplica(integer: row[stored], text: nil)
        }
    }

    /// The task as the field sees it: the master's columns and what the field says in its own. A
    /// value that does not parse reads as absent (`verify` names such damage by column).
    static func asTheFieldSays(_ row: Row) throws -> FieldTask {
        try FieldTask(values: { value(row, $0, field: true) }, lenient: true)
    }
}
