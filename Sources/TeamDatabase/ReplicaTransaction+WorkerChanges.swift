import Foundation
import GRDB
import TeamworkModel

extension ReplicaTransaction {
    /// Checks one pushed change against what the replica holds, records it in
    /// `worker_changes` (once per change id) and shows its effect on the task
    /// (worker-owned fields, with a new row version) so teammates pull it.
    public func apply(_ change: WorkerChange, by personID: Int64, receivedAt: Date) throws -> WorkerChangeResult {
        let earlierSQL = "SELECT person_id, rejection FROM worker_changes WHERE change_id = ?"
        if let earlier = try Row.fetchOne(db.cachedStatement(sql: earlierSQL), arguments: [change.id]) {
            // A change is its maker's: someone else's id says nothing of theirs (as the master's ledger keys by person).
            guard earlier[0] as Int64 == personID else {
                return .rejected(change.id, "this change id is taken; a change needs an id of its own")
            }
            let reason: String? = earlier[1]
            return reason.map { .rejected(change.id, $0) } ?? .accepted(change.id, duplicate: true)
        }
        if let reason = try rejection(of: change, by: personID, receivedAt: receivedAt) {
            // Kept (with its reason) so the listener shows managers what the field
            // tried, but only what is safe to keep: a task of this replica (history is
            // written only there), a note within its limit, a plausible time. An id too
            // malformed to keep is refused without a trace.
            if WorkerChange.isWellFormed(id: change.id) {
                var kept = change
                if try !holds(change.taskID) { kept.taskID = nil }
                if (change.note?.utf8.count ?? 0) > WorkerChange.maximumNoteBytes || change.operation == .checkin { kept.note = nil }
                if !WorkerChange.isPlausible(madeAt: change.madeAt, receivedAt: receivedAt) { kept.madeAt = receivedAt }
                if change.operation != .checkin { (kept.latitude, kept.longitude) = (nil, nil) }
                if (change.item?.utf8.count ?? 0) > 100 { kept.item = nil }
                if (change.value?.utf8.count ?? 0) > ChecklistItem.maximumTextBytes { kept.value = nil }
                if (change.blob?.utf8.count ?? 0) > 64 { kept.blob = nil }
                if (change.mediaType?.utf8.count ?? 0) > 100 { kept.mediaType = nil }
                if (change.signer?.utf8.count ?? 0) > WorkerChange.maximumSignerBytes { kept.signer = nil }
                try record(kept, by: personID, made: kept.madeAt.millisecondsSince1970, receivedAt: receivedAt, rejection: reason)
            }
            return .rejected(change.id, reason)
        }
        let made = change.madeAt.millisecondsSince1970
        if let taskID = change.taskID, let before = try FieldWorkRow.fetchOne(db, id: taskID) {
            let after = change.effect(on: before.facts, by: personID, at: change.effectiveTime(receivedAt: receivedAt))
            if after != before.facts { try FieldWorkRow(id: taskID, after).write(db, version: nextVersion()) }
        }
        try record(change, by: personID, made: made, receivedAt: receivedAt, rejection: nil)
        return .accepted(change.id)
    }

    /// Whether this replica holds the task.
    private func holds(_ taskID: Int64?) throws -> Bool {
        guard let taskID else { return false }
        return try Int.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM tasks WHERE id = ?"), arguments: [taskID]) != nil
    }

    private func record(_ change: WorkerChange, by personID: Int64, made: Int64, receivedAt: Date, rejection: String?) throws {
        let payload = try JSONEncoder().encode(change)
        try db.cachedStatement(
            sql: """
                INSERT INTO worker_changes (change_id, person_id, task_id, operation, payload, made_at, received_at, rejection)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            change.id, personID, change.taskID, change.operation.rawValue,
            String(decoding: payload, as: UTF8.self), made, receivedAt.millisecondsSince1970, rejection,
        ])
    }

    /// Why a change cannot be applied, or `nil` when it can: the shared rules
    /// (``WorkerChange/rejection(by:task:inTeam:receivedAt:)``) with this replica's copy of the task and of the member.
    private func rejection(of change: WorkerChange, by personID: Int64, receivedAt: Date) throws -> String? {
        let task = try change.taskID.flatMap { try FieldWorkRow.fetchOne(db, id: $0) }?.facts
        let skills = try String.fetchOne(db.cachedStatement(sql: "SELECT skills FROM members WHERE person_id = ?"), arguments: [personID])
        let worker = FieldWorker(id: personID, skills: skills.map { $0.split(separator: ",").map(String.init) } ?? [])
        let inTeam = if case .team = replica { true } else { false }
        return change.rejection(by: worker, task: task, inTeam: inTeam, receivedAt: receivedAt)
    }
}
