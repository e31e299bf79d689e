import Foundation
import TeamworkModel

/// One page of what changed in a team or personal replica since a client's
/// position: the core of the sync pull (`GET /v1/replicas/{name}/changes`).
///
/// Positions are `row_version`s of the file. A client sends the epoch and the
/// position it holds; when the epoch differs (the file was rebuilt) or the
/// client has none, the page says `refetch` and starts from 0, and the client
/// replaces its copy once it has read every page.
public struct ChangePage: Sendable, Codable, Equatable {
    /// A task as a replica holds it (the field's columns as the field says) at `rowVersion`: its columns as
    /// ``TaskSchema`` declares them, and nothing else (a column added there travels with no change here).
    /// Read as the task it carries (`page.tasks[0].title`).
    @dynamicMemberLookup
    public struct Task: Sendable, Codable, Equatable {
        /// The task: as a replica holds it when sent, as a device may know it when received (what travels).
        public var task: FieldTask
        public var rowVersion: Int64

        /// `task` as a replica holds it (only what travels is written: ``TaskSchema/travelled(_:)`` is what a
        /// device reads back).
        public init(_ task: FieldTask, rowVersion: Int64) {
            self.task = task
            self.rowVersion = rowVersion
        }

        public subscript<Value>(dynamicMember path: KeyPath<FieldTask, Value>) -> Value { task[keyPath: path] }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: TeamworkJSON.Key.self)
            task = try TaskSchema.decode(from: container)
            rowVersion = try container.decode(Int64.self, forKey: .init("rowVersion"))
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: TeamworkJSON.Key.self)
            try TaskSchema.encode(task, into: &container)
            try container.encode(rowVersion, forKey: .init("rowVersion"))
        }
    }

    public struct Member: Sendable, Codable, Equatable {
        public var personID: Int64
        public var firstName: String
        public var lastName: String
        public var role: String
        public var rowVersion: Int64
        /// What the member can do, for the rules of a claim; absent from servers before replica schema 4.
        public var skills: [String]?

        public init(personID: Int64, firstName: String, lastName: String, role: String, rowVersion: Int64, skills: [String]? = nil) {
            self.personID = personID
            self.firstName = firstName
            self.lastName = lastName
            self.role = role
            self.rowVersion = rowVersion
            self.skills = skills
        }
    }

    /// A change the sync endpoint took but the master did not: the device that
    /// made it shows the master's view again (it comes in `tasks`) and tells the
    /// worker why. Absent from servers before replica schema 4.
    public struct Refusal: Sendable, Codable, Equatable {
        public var personID: Int64
        public var changeID: String
        public var taskID: Int64?
        public var operation: String
        /// The master's rule: cancelled, claimed_by_other, missing_skills, invalid, ...
        public var rule: String
        public var reason: String
        public var decidedAt: Int64
        public var rowVersion: Int64
        /// The dispatcher's dismissal, with the reason written for the worker ("dismissed: ..."); absent until then.
        public var decision: String?

        public init(
            personID: Int64, changeID: String, taskID: Int64?, operation: String, rule: String, reason: String,
            decidedAt: Int64, rowVersion: Int64, decision: String? = nil
        ) {
            (self.personID, self.changeID, self.taskID, self.operation) = (personID, changeID, taskID, operation)
            (self.rule, self.reason, self.decidedAt, self.rowVersion, self.decision) = (rule, reason, decidedAt, rowVersion, decision)
        }
    }

    public struct Location: Sendable, Codable, Equatable {
        public var id: Int64
        public var name: String
        public var latitude: Double
        public var longitude: Double
        public var elevation: Double?
        public var street: String
        public var city: String
        public var region: String
        public var postalCode: String
        public var country: String
        public var rowVersion: Int64

        public init(
            id: Int64, name: String, latitude: Double, longitude: Double, elevation: Double?, street: String,
            city: String, region: String, postalCode: String, country: String, rowVersion: Int64
        ) {
            self.id = id
            self.name = name
            self.latitude = latitude
            self.longitude = longitude
            self.elevation = elevation
            self.street = street
            self.city = city
            self.region = region
            self.postalCode = postalCode
            self.country = country
            self.rowVersion = rowVersion
        }
    }

    public struct Deletion: Sendable, Codable, Equatable {
        public var table: String
        public var id: Int64
        public var rowVersion: Int64

        public init(table: String, id: Int64, rowVersion: Int64) {
            self.table = table
            self.id = id
            self.rowVersion = rowVersion
        }
    }

    public var epoch: String
    /// True when the client must drop its copy and rebuild it from these pages.
    public var refetch: Bool
    /// The position this page starts after.
    public var since: Int64
    /// The position the client holds once it has applied this page.
    public var upTo: Int64
    /// More pages follow: ask again with `since = upTo`.
    public var more: Bool
    public var tasks: [Task]
    public var members: [Member]
    public var locations: [Location]
    public var deleted: [Deletion]
    /// The master's refusals of changes this replica had taken.
    public var refused: [Refusal]?

    public init(
        epoch: String, refetch: Bool, since: Int64, upTo: Int64, more: Bool, tasks: [Task], members: [Member],
        locations: [Location], deleted: [Deletion], refused: [Refusal]? = nil
    ) {
        self.epoch = epoch
        self.refetch = refetch
        self.since = since
        self.upTo = upTo
        self.more = more
        self.tasks = tasks
        self.members = members
        self.locations = locations
        self.deleted = deleted
        self.refused = refused
    }
}
