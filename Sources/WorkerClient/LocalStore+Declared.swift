import Foundation
import GRDB
import SyncProtocol
import TeamworkModel

/// The device's `tasks` as ``TaskSchema`` declares a task: every column that travels under its wire key, and the
/// server's copy (`server_<key>`) of each the field writes or a claim shows in, from which the device works out
/// what it shows whenever its queue or the server moves (``DeviceTaskRow``). Written and read from the
/// declaration alone: a column added there needs no line here.
extension LocalStore {
    /// The columns the declaration gives a device's `tasks` (besides `replica`), with their SQLite types.
    static let declaredColumns: [(name: String, type: String, column: TaskColumn)] =
        TaskSchema.travelling.map { ($0.wireKey, deviceType($0), $0) }
        + TaskSchema.travelling.filter { $0.owner != .master }.map { ("server_\($0.wireKey)", deviceType($0), $0) }

    /// A replica's type for the column, as a column added to a table that has rows can be: the device's key is
    /// `(replica, id)`, and NOT NULL needs a default until the next full copy fills it.
    private static func deviceType(_ column: TaskColumn) -> String {
        let type = column.replica!.replacingOccurrences(of: " PRIMARY KEY", with: "")
        guard type.contains("NOT NULL"), !type.contains("DEFAULT") else { return type }
        return type + (column.kind == .text || column.kind == .answers ? " DEFAULT ''" : " DEFAULT 0")
    }

    /// Which declaration wrote a row (`declared_by`): the columns' names and types, hashed. A row another
    /// declaration wrote (an older teamwork-worker still running when a newer one added columns) lacks what
    /// this one holds.
    static let declaration: String = Fingerprint.of(declaredColumns.map { "\($0.name) \($0.type)" }.joined(separator: "\n"))

    /// Adds what the declaration has and the file lacks (run at every open, after the migrations), and has the
    /// copies holding rows another declaration wrote taken again from their start at the next sync, which
    /// fills them. A file with task columns this declaration lacks was written by a newer teamwork-worker:
    /// refused, untouched.
    static func declareTaskColumns(_ db: Database) throws {
        let has = Set(try db.columns(in: "tasks").map(\.name))
        let known = Set(["replica", "declared_by"] + declaredColumns.map(\.name))
        if let newer = has.subtracting(known).sorted().first {
            throw TeamworkError(
                .configuration, "this device's file was written by a newer teamwork-worker (tasks.\(newer)); update this one")
        }
        for column in declaredColumns where !has.contains(column.name) {
            try db.execute(sql: "ALTER TABLE tasks ADD COLUMN \(column.name) \(column.type)")
        }
        try db.execute(
            sql: """
                UPDATE replicas SET position = 0, epoch = NULL
                WHERE name IN (SELECT DISTINCT replica FROM tasks WHERE declared_by IS NOT ?) AND (position <> 0 OR epoch IS NOT NULL)
                """, arguments: [declaration])
    }

    /// One task as the server sent it, shown so and kept as the server's view.
    static let insertTask: String = {
        let names = ["replica", "declared_by"] + declaredColumns.map(\.name)
        return "INSERT OR REPLACE INTO tasks (\(names.joined(separator: ", "))) VALUES (\(names.map { _ in "?" }.joined(separator: ", ")))"
    }()

    static func insert(_ task: FieldTask, into replica: String, _ db: Database) throws {
        let values: [DatabaseValue] = declaredColumns.map { entry in
            switch entry.column.stored(entry.column.value(task)) {
            case .integer(let value): value.databaseValue
            case .text(let value): value.databaseValue
            case .null, .date, .bool: .null
            }
        }
        try db.execute(sql: insertTask, arguments: StatementArguments([replica.databaseValue, declaration.databaseValue] + values))
    }

    /// A `tasks` row as the task it holds, the device's shown values in the field's columns; nil for a row
    /// without the columns every task has.
    static func task(_ row: Row) -> FieldTask? {
        try? FieldTask(
            values: { name in
                guard let column = TaskSchema.position[name].map({ TaskSchema.columns[$0] }), column.replica != nil else { return .null }
                switch column.kind {
                case .text, .answers: return column.fromReplica(integer: nil, text: row[column.wireKey])
                case .integer, .date, .bool: return column.fromReplica(integer: row[column.wireKey], text: nil)
                }
            }, lenient: true)
    }
}
