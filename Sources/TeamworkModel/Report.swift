import Foundation

/// The managers' overview: where the work stands.
public struct Report: Sendable, Codable, Equatable {
    public struct TeamLine: Sendable, Codable, Equatable {
        /// `nil` for tasks assigned to a person with no team.
        public var teamSlug: String?
        public var counts: [String: Int]
        public var total: Int
        public var overdue: Int

        public init(teamSlug: String?, counts: [String: Int], total: Int, overdue: Int) {
            self.teamSlug = teamSlug
            self.counts = counts
            self.total = total
            self.overdue = overdue
        }
    }

    /// Open work one person holds (assigned or in progress).
    public struct Workload: Sendable, Codable, Equatable {
        public var personID: Int64
        public var name: String
        public var open: Int
        public var inProgress: Int
        public var urgent: Int
        public var overdue: Int

        public init(personID: Int64, name: String, open: Int, inProgress: Int, urgent: Int, overdue: Int) {
            self.personID = personID
            self.name = name
            self.open = open
            self.inProgress = inProgress
            self.urgent = urgent
            self.overdue = overdue
        }
    }

    /// How long a team takes, from a task's (last) assignment to its completion.
    public struct Turnaround: Sendable, Codable, Equatable {
        /// `nil` for personal tasks.
        public var teamSlug: String?
        public var completed: Int
        public var medianHours: Double

        public init(teamSlug: String?, completed: Int, medianHours: Double) {
            self.teamSlug = teamSlug
            self.completed = completed
            self.medianHours = medianHours
        }
    }

    public var generatedAt: Date
    public var countsByStatus: [String: Int]
    public var teams: [TeamLine]
    public var overdueTasks: [FieldTask]
    public var total: Int
    /// Completed tasks over tasks that were not cancelled; `nil` when there are none.
    public var completionRate: Double?
    /// Worker changes from the field the master has taken in, and how many of
    /// them are conflicts no manager has resolved yet (`teamwork-manager conflicts`).
    public var fieldChanges: Int
    public var openConflicts: Int
    /// Tasks still needing work that are due within ``dueSoonHours`` of ``generatedAt``, soonest first.
    public var dueSoon: [FieldTask] = []
    public var dueSoonHours = 24
    /// How many tasks are overdue, and due soon, in all: the lists above stop at the report's limit.
    public var overdueCount = 0
    public var dueSoonCount = 0
    /// Everyone holding open work, most first.
    public var workload: [Workload] = []
    /// Per team, over tasks completed in the last ``turnaroundDays`` days.
    public var turnaround: [Turnaround] = []
    public var turnaroundDays = 30
    /// Each plan: its occurrences due in the next 7 days, and whether its last occurrence
    /// already due was missed (neither completed nor cancelled by then).
    public var plans: [PlanLine] = []
    /// Per checklist, over tasks completed in the last ``turnaroundDays`` days: how many, and how
    /// many of them with a required item unanswered or a check answered no.
    public var checklists: [ChecklistLine] = []

    public struct ChecklistLine: Sendable, Codable, Equatable {
        public var name: String
        public var completed: Int
        public var withMissing: Int
        public var withFailed: Int

        public init(name: String, completed: Int, withMissing: Int, withFailed: Int) {
            (self.name, self.completed, self.withMissing, self.withFailed) = (name, completed, withMissing, withFailed)
        }
    }

    public struct PlanLine: Sendable, Codable, Equatable {
        public var planID: Int64
        public var title: String
        public var dueThisWeek: Int
        public var lastDue: Date?
        public var lastMissed: Bool

        public init(planID: Int64, title: String, dueThisWeek: Int, lastDue: Date?, lastMissed: Bool) {
            (self.planID, self.title, self.dueThisWeek, self.lastDue, self.lastMissed) = (planID, title, dueThisWeek, lastDue, lastMissed)
        }
    }

    public init(
        generatedAt: Date, countsByStatus: [String: Int], teams: [TeamLine], overdueTasks: [FieldTask], total: Int,
        completionRate: Double?, fieldChanges: Int = 0, openConflicts: Int = 0
    ) {
        self.generatedAt = generatedAt
        self.countsByStatus = countsByStatus
        self.teams = teams
        self.overdueTasks = overdueTasks
        self.total = total
        self.completionRate = completionRate
        self.fieldChanges = fieldChanges
        self.openConflicts = openConflicts
    }
}
