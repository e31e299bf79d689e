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

    public init(generatedAt: Date, countsByStatus: [String: Int], teams: [TeamLine], overdueTasks: [FieldTask], total: Int,
                completionRate: Double?, fieldChanges: Int = 0, openConflicts: Int = 0) {
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
