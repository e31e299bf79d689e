import Foundation
import TeamworkModel

extension WorkerChange {
    /// Why this change cannot be made by `personID`, or `nil` when it can: the
    /// rules, written once. The device checks them before it queues a change
    /// (with its copy of the task), the sync endpoint before it stores one
    /// (with the replica's), and the master keeps its own authoritative check
    /// (`teamwork_apply_field_changes`), since a replica can be behind it.
    ///
    /// `task` is `nil` when the replica does not hold the task; `inTeam` tells
    /// a team's replica from a person's; `receivedAt` bounds `madeAt`.
    ///
    /// Skills are checked where a worker picks work (a claim): a task assigned
    /// to them was checked when a manager assigned it, or deliberately forced,
    /// and the master holds start and complete to that assignment.
    public func rejection(by worker: FieldWorker, task: TaskFacts?, inTeam: Bool, receivedAt: Date) -> String? {
        let personID = worker.id
        guard Self.isWellFormed(id: id) else {
            return "a change id has 1 to \(Self.maximumIDBytes) bytes and no control characters"
        }
        guard Self.isPlausible(madeAt: madeAt, receivedAt: receivedAt) else {
            return "made_at must be after 2000-01-01 and at most a day after the server's clock"
        }
        if let note, note.utf8.count > Self.maximumNoteBytes {
            return "a note has at most \(Self.maximumNoteBytes) bytes (UTF-8)"
        }
        if ![.answer, .use, .time].contains(operation), value != nil { return "only an answer, a use or a time entry carries a value" }
        if ![.answer, .attach, .use, .time].contains(operation), item != nil {
            return "only an answer, an attachment, a use or a time entry names an item"
        }
        if operation != .attach, blob != nil || size != nil || mediaType != nil || signer != nil {
            return "only an attachment carries a blob, a size, a media type or a signer"
        }
        if operation == .checkin {
            guard let latitude, let longitude, (-90...90).contains(latitude), (-180...180).contains(longitude) else {
                return "a check-in needs a latitude between -90 and 90 and a longitude between -180 and 180"
            }
            if taskID != nil || note != nil { return "a check-in carries a position only: no task_id, no note" }
            return nil
        }
        if latitude != nil || longitude != nil { return "only a check-in carries a position" }
        guard let taskID else { return "\(operation.rawValue) needs a task_id" }
        guard let task else { return "task \(taskID) is not in this replica" }
        if task.status == .cancelled { return "task \(taskID) was cancelled" }
        switch operation {
        case .claim:
            guard inTeam else { return "only a team's free-floating task can be claimed" }
            if task.assigneeID == personID { return "task \(taskID) is already yours" }
            if task.assigneeID != nil { return "task \(taskID) is assigned to someone else" }
            if task.status == .completed { return "task \(taskID) is already completed" }
            if let skills = worker.skills, case let missing = task.missingSkills(skills), !missing.isEmpty {
                return "task \(taskID) needs \(missing.joined(separator: ", ")), which you do not have"
            }
        case .start, .complete:
            if task.assigneeID == nil { return "claim task \(taskID) before working on it" }
            if task.assigneeID != personID { return "task \(taskID) is assigned to someone else" }
            if task.status == .completed { return "task \(taskID) is already completed" }
            if operation == .start, task.status == .inProgress { return "task \(taskID) is already started" }
            if operation == .complete, let checklist = task.checklist, case let missing = checklist.missing(in: task.answers),
                !missing.isEmpty
            {
                return "task \(taskID) needs answers to \(missing.joined(separator: ", ")) before it is completed"
            }
        case .answer:
            guard let item, let value else { return "an answer needs an item and a value" }
            if task.assigneeID == nil { return "claim task \(taskID) before working on it" }
            if task.assigneeID != personID { return "task \(taskID) is assigned to someone else" }
            if task.status == .completed { return "task \(taskID) is completed; reopen it to change an answer" }
            guard let spec = task.checklist?.item(item) else {
                return "task \(taskID) has no checklist item '\(TerminalText.inline(String(item.prefix(40))))'"
            }
            if let problem = spec.problem(with: value) { return "\(item): \(problem)" }
        case .use:
            if let problem = materialProblem() { return problem }
            if task.assigneeID == nil { return "claim task \(taskID) before working on it" }
            if task.assigneeID != personID { return "task \(taskID) is assigned to someone else" }
            if task.status == .completed { return "task \(taskID) is completed; reopen it to change what was used" }
        case .time:
            // Time is recorded by who worked it: the task's assignee or its completer, before or after it is
            // completed (the master also knows who held it earlier: teamwork_time_held).
            if note != nil { return "a time entry carries no note" }
            if let problem = TimeOnJob.problem(kind: item, value: value, receivedAt: receivedAt) { return problem }
            if let value, let problem = TimeOnJob.staleProblem(value: value, receivedAt: receivedAt) { return problem }
            if task.assigneeID != personID, task.completedBy != personID {
                return
                    "you record time only on a task you hold or held (task \(taskID) is \(task.assigneeID == nil ? "nobody's" : "someone else's"))"
            }
        case .attach:
            if task.assigneeID == nil { return "claim task \(taskID) before working on it" }
            if task.assigneeID != personID { return "task \(taskID) is assigned to someone else" }
            if task.status == .completed { return "task \(taskID) is completed; reopen it to add a file" }
            if let problem = attachmentProblem(task: task, taskID: taskID) { return problem }
        case .reopen:
            if task.status != .completed { return "task \(taskID) is not completed" }
            if task.completedBy != personID { return "only the worker who completed task \(taskID) can reopen it" }
        case .checkin:
            break
        }
        return nil
    }
}

extension WorkerChange {
    /// Why a use is not well formed, or `nil`: a quantity, and either a part's code (no note) or,
    /// for a line not in the catalogue, its description in the note. Whether the part is in the
    /// catalogue (and not retired) is the master's to say.
    public func materialProblem() -> String? {
        guard let value else { return "a use needs a quantity (value)" }
        if let problem = Material.quantityProblem(value) { return problem }
        if let item {
            guard NewPart.isCode(item) else {
                return
                    "a part's code is 1 to 40 letters, digits, '.', '_', '/' or '-' (not '\(TerminalText.inline(String(item.prefix(40))))')"
            }
            if note != nil { return "a part's name comes from the catalogue: a use of a part carries no note" }
        } else {
            guard let note else { return "a use names a part (item), or describes a line not in the catalogue (note)" }
            if let problem = Material.descriptionProblem(note) { return problem }
        }
        return nil
    }

    /// Why an attachment cannot be added to `task`, or `nil` when it can (after the assignment checks).
    func attachmentProblem(task: TaskFacts, taskID: Int64) -> String? {
        guard let blob, blob.utf8.count == 64, blob.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            return "an attachment names its file by the SHA-256 of its bytes: 64 lowercase hex digits"
        }
        guard let size, (1...Self.maximumAttachmentBytes).contains(size) else {
            return "an attachment is 1 byte to \(Self.maximumAttachmentBytes) bytes"
        }
        guard let mediaType, Self.attachmentTypes.contains(mediaType) else {
            return "an attachment is a JPEG, PNG, HEIC or PDF file"
        }
        if let signer, !ChecklistForm.isOneLine(signer, most: Self.maximumSignerBytes) {
            return "a signer's name is one line of 1 to \(Self.maximumSignerBytes) bytes"
        }
        if signer != nil, !["image/png", "image/jpeg"].contains(mediaType) { return "a signature is a PNG or JPEG image" }
        if let item {
            guard let spec = task.checklist?.item(item) else {
                return "task \(taskID) has no checklist item '\(TerminalText.inline(String(item.prefix(40))))'"
            }
            switch spec.kind {
            case .photo where signer == nil: break
            case .signature where signer != nil: break
            case .signature: return "\(item) is a signature: sign it (teamwork-worker sign \(taskID) --signer NAME FILE --item \(item))"
            case .photo: return "\(item) takes a photo, not a signature"
            default: return "\(item) is answered by a value, not a file"
            }
            if mediaType == "application/pdf", spec.kind == .photo { return "\(item) takes a photo (JPEG, PNG or HEIC)" }
        }
        return nil
    }
}
