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
    public struct Task: Sendable, Codable, Equatable {
        public var id: Int64
        public var title: String
        public var description: String
        public var priority: String
        public var teamID: Int64?
        public var assigneeID: Int64?
        public var locationID: Int64?
        public var dueAt: Int64?
        public var createdAt: Int64
        public var updatedAt: Int64
        public var masterVersion: Int
        /// What the field says: worker-owned fields as they stand in the replica.
        public var status: String
        public var startedAt: Int64?
        public var completedAt: Int64?
        public var completedBy: Int64?
        public var completionNote: String?
        public var rowVersion: Int64
        /// The appointment window (milliseconds), both or neither. Absent from
        /// servers before replica schema 3, as is ``requiredSkills``.
        public var windowStart: Int64?
        public var windowEnd: Int64?
        /// Skills whoever goes must have; absent or empty when none.
        public var requiredSkills: [String]?
        /// The IANA zone its times are read in (its site's, else its team's); absent
        /// from servers before replica schema 5, which meant UTC.
        public var timeZone: String?
        /// The plan that made it and the plan's day (`2026-12-07`) it stands for; absent for a task made by hand.
        public var planID: Int64?
        public var planDate: String?
        /// The checklist version it carries and the latest answer to each item, as the field says;
        /// absent from servers before replica schema 7 (no checklists then).
        public var checklist: ChecklistForm?
        public var answers: [AnsweredItem]?
        /// When the day planner expects work to start (milliseconds), and its minutes on site; absent
        /// when not planned or not said, and from servers before replica schema 8.
        public var plannedStart: Int64?
        public var durationMinutes: Int?
        /// The customer's first name and how the booked visit stands (`none`, `confirmed`, `move`,
        /// `cancel`); absent when there is none, and from servers before replica schema 11.
        public var customerFirstName: String?
        public var visit: String?

        /// A task as a replica holds it (the field's columns as the field says) at `rowVersion`:
        /// the one mapping of a task onto the page.
        public init(_ task: FieldTask, rowVersion: Int64) {
            (id, title, description, priority) = (task.id, task.title, task.description, task.priority.rawValue)
            (teamID, assigneeID, locationID) = (task.teamID, task.assigneeID, task.locationID)
            (dueAt, createdAt, updatedAt) = (
                task.dueAt?.millisecondsSince1970, task.createdAt.millisecondsSince1970, task.updatedAt.millisecondsSince1970
            )
            (masterVersion, status) = (task.version, task.status.rawValue)
            (startedAt, completedAt) = (task.startedAt?.millisecondsSince1970, task.completedAt?.millisecondsSince1970)
            (completedBy, completionNote, self.rowVersion) = (task.completedBy, task.completionNote, rowVersion)
            (windowStart, windowEnd) = (task.window?.start.millisecondsSince1970, task.window?.end.millisecondsSince1970)
            requiredSkills = task.requiredSkills.isEmpty ? nil : task.requiredSkills
            (timeZone, planID, planDate) = (task.timeZone, task.planID, task.planDate?.description)
            checklist = task.checklist
            answers = task.answers.isEmpty ? nil : AnsweredItem.list(task.answers)
            (plannedStart, durationMinutes) = (task.plannedStart?.millisecondsSince1970, task.durationMinutes)
            (customerFirstName, visit) = (task.customerFirstName, task.visit)
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
