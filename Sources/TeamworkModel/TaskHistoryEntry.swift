import Foundation

/// One change to a task, as recorded in the same transaction as the change.
public struct TaskHistoryEntry: Sendable, Codable, Equatable {
    public var id: Int64
    public var taskID: Int64
    /// `created`, `updated`, `deleted`, or `field_change` for a worker's change
    /// the master took in without changing the task (a conflict, or nothing to do).
    public var action: String
    public var actorID: Int64?
    /// The database role that made the change.
    public var databaseUser: String
    public var changedAt: Date
    /// Field name to old and new value, as JSON text of each value.
    public var changes: [String: FieldChange]
    /// The worker's change this entry came from, if it came from the field.
    public var fieldChangeID: String?

    public init(
        id: Int64, taskID: Int64, action: String, actorID: Int64?, databaseUser: String, changedAt: Date,
        changes: [String: FieldChange], fieldChangeID: String? = nil
    ) {
        self.id = id
        self.taskID = taskID
        self.action = action
        self.actorID = actorID
        self.databaseUser = databaseUser
        self.changedAt = changedAt
        self.changes = changes
        self.fieldChangeID = fieldChangeID
    }
}

/// The old and new value of one field, rendered as text (`nil` when absent).
public struct FieldChange: Sendable, Codable, Equatable {
    public var old: String?
    public var new: String?

    public init(old: String?, new: String?) {
        self.old = old
        self.new = new
    }
}

/// One position of the change feed.
public struct FeedEntry: Sendable, Codable, Equatable {
    public var position: Int64
    public var entity: String
    public var entityID: Int64
    public var operation: String
    public var teamID: Int64?
    public var oldTeamID: Int64?
    public var assigneeID: Int64?
    public var oldAssigneeID: Int64?
    public var changedAt: Date

    public init(
        position: Int64, entity: String, entityID: Int64, operation: String,
        teamID: Int64?, oldTeamID: Int64?, assigneeID: Int64?, oldAssigneeID: Int64?, changedAt: Date
    ) {
        self.position = position
        self.entity = entity
        self.entityID = entityID
        self.operation = operation
        self.teamID = teamID
        self.oldTeamID = oldTeamID
        self.assigneeID = assigneeID
        self.oldAssigneeID = oldAssigneeID
        self.changedAt = changedAt
    }
}
