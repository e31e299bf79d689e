import Foundation
import GRDB
import TeamworkModel

/// What the event listener reads from one replica file's `worker_changes`.
public struct WorkerChangeBatch: Sendable {
    /// Changes after the cursor, in position order.
    public var changes: [RecordedWorkerChange]
    /// The file no longer holds the cursor's change at its position (it was
    /// recreated and its positions restarted): the batch starts from the beginning.
    public var restarted: Bool
    /// How many changes follow the cursor in all, this batch included: at most
    /// (positions can have gaps), read from the last position rather than counted.
    public var waiting: Int
    /// When the oldest of them was received, if any.
    public var oldestReceivedAt: Date? {
        changes.first.map { Date(millisecondsSince1970: $0.receivedAt) }
    }

    /// The cursor after this batch is taken in.
    public var cursorAfter: ListenerCursor? {
        changes.last.map { ListenerCursor(position: $0.position, changeID: $0.changeID) }
    }
}

extension ReplicaDirectory {
    /// The files of removed teams and people that may still hold worker changes.
    public func retiredFiles() throws -> [(replica: ReplicaID, path: String, name: String)] {
        try FileManager.default.contentsOfDirectory(atPath: retiredURL.path).sorted().compactMap { name in
            // team-12.sqlite.1732190000
            guard let dot = name.lastIndex(of: "."), Int(name[name.index(after: dot)...]) != nil,
                let replica = ReplicaID(fileName: String(name[..<dot])), replica != .common
            else { return nil }
            return (replica, retiredURL.appending(path: name).path, name)
        }
    }

    /// Whether `error` means another connection held the file too long (busy or
    /// locked), as opposed to a file that cannot be read at all.
    public static func isBusy(_ error: any Error) -> Bool {
        guard let error = error as? DatabaseError else { return false }
        return error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED
    }

    /// The most bytes of text (notes, reasons, ids) one batch carries to the
    /// master: a batch is one jsonb value, and whatever the field sends must
    /// stay far from PostgreSQL's limits and the process's memory.
    public static let maximumBatchBytes = 4 << 20

    /// Reads up to `limit` worker changes after `cursor` from the replica file
    /// at `path` (a live replica or a retired one), and fewer when their text
    /// passes `maximumBytes` (never fewer than one). Waits at most `busyTimeout`
    /// for a writer; a damaged or locked file throws.
    public static func workerChanges(
        at path: String, after cursor: ListenerCursor, limit: Int,
        maximumBytes: Int = maximumBatchBytes,
        busyTimeout: TimeInterval = 2
    ) throws -> WorkerChangeBatch {
        // Read-only: a file opened for writing reports a write when it is closed,
        // which would wake a watching listener for nothing.
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.readonly = true
        var queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        let version = try queue.read { try Int.fetchOne($0, sql: "PRAGMA user_version") ?? 0 }
        if (1..<ReplicaSchema.version).contains(version) {
            try queue.close()
            configuration.readonly = false
            let writable = try DatabaseQueue(path: path, configuration: configuration)
            try ReplicaSchema.upgrade(writable)
            try writable.close()
            configuration.readonly = true
            queue = try DatabaseQueue(path: path, configuration: configuration)
        } else if version != ReplicaSchema.version {
            throw ReplicaError("\(path) has schema version \(version), expected \(ReplicaSchema.version)")
        }
        return try queue.read { db in
            var after = cursor.position
            var restarted = false
            if after > 0 {
                let there = try String.fetchOne(db, sql: "SELECT change_id FROM worker_changes WHERE position = ?", arguments: [after])
                if there == nil || there != cursor.changeID {
                    after = 0
                    restarted = true
                }
            }
            var changes: [RecordedWorkerChange] = []
            var bytes = 0
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT position, change_id, person_id, task_id, operation, json_extract(payload, '$.note') AS note,
                           made_at, received_at, json_extract(payload, '$.latitude') AS latitude,
                           json_extract(payload, '$.longitude') AS longitude, rejection, json_extract(payload, '$.item') AS item,
                           json_extract(payload, '$.value') AS value, json_extract(payload, '$.blob') AS blob,
                           json_extract(payload, '$.size') AS size, json_extract(payload, '$.media_type') AS media_type,
                           json_extract(payload, '$.signer') AS signer
                    FROM worker_changes WHERE position > ? ORDER BY position LIMIT ?
                    """, arguments: [after, limit])
            while let row = try rows.next() {
                let change = RecordedWorkerChange(
                    position: row["position"], changeID: row["change_id"], personID: row["person_id"], taskID: row["task_id"],
                    operation: row["operation"],
                    note: row["note"], madeAt: row["made_at"], receivedAt: row["received_at"], latitude: row["latitude"],
                    longitude: row["longitude"],
                    rejection: row["rejection"], item: Self.text(row["item"]), value: Self.text(row["value"]),
                    blob: Self.text(row["blob"]), size: Self.text(row["size"]).flatMap { Int64($0) },
                    mediaType: Self.text(row["media_type"]), signer: Self.text(row["signer"]))
                bytes +=
                    200 + change.changeID.utf8.count + (change.note?.utf8.count ?? 0) + (change.rejection?.utf8.count ?? 0)
                    + (change.item?.utf8.count ?? 0) + (change.value?.utf8.count ?? 0) + (change.signer?.utf8.count ?? 0)
                if !changes.isEmpty && bytes > maximumBytes { break }
                changes.append(change)
            }
            let last = try Int64.fetchOne(db, sql: "SELECT max(position) FROM worker_changes") ?? 0
            return WorkerChangeBatch(changes: changes, restarted: restarted, waiting: Int(max(0, last - after)))
        }
    }

    /// A payload field as text, whatever JSON type a client put there (json_extract gives a
    /// number for a number): the master's rules then refuse what is not a string item's value.
    static func text(_ value: DatabaseValue) -> String? {
        switch value.storage {
        case .null: nil
        case .string(let text): text
        case .int64(let number): String(number)
        case .double(let number): String(number)
        case .blob(let data): String(decoding: data, as: UTF8.self)
        }
    }
}
