import Foundation
import TeamworkModel

/// The field on a map: tasks at their sites and workers at their last-known
/// positions, as an RFC 7946 GeoJSON FeatureCollection. Coordinates are
/// `[longitude, latitude]` (WGS 84). A task without a site, or a worker who has
/// never checked in, is a Feature with `"geometry": null` (RFC 7946 §3.2), so
/// nothing in scope is silently left off.
public struct DispatchMap: Encodable, Sendable {
    public var type = "FeatureCollection"
    public var features: [Feature]

    public struct Point: Encodable, Sendable {
        var type = "Point"
        public var coordinates: [Double]
    }

    public struct Feature: Encodable, Sendable {
        var type = "Feature"
        /// `task-12`, `worker-3`: unique within the collection.
        public var id: String
        public var geometry: Point?
        public var properties: Properties

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(type, forKey: .type)
            try c.encode(id, forKey: .id)
            // RFC 7946: an unlocated feature has "geometry": null, not no member.
            if let geometry { try c.encode(geometry, forKey: .geometry) } else { try c.encodeNil(forKey: .geometry) }
            try c.encode(properties, forKey: .properties)
        }

        enum Keys: String, CodingKey { case type, id, geometry, properties }
    }

    /// One flat set of properties for both kinds (`kind` says which), so a map
    /// tool can style on any of them.
    public struct Properties: Encodable, Sendable {
        public var kind: String
        // Tasks
        public var taskID: Int64?
        public var title: String?
        public var status: String?
        public var priority: String?
        public var team: String?
        public var assigneeID: Int64?
        public var assignee: String?
        public var due: Date?
        public var windowStart: Date?
        public var windowEnd: Date?
        public var requires: [String]?
        /// Overdue or past its window, still needing work.
        public var late: Bool?
        public var site: String?
        /// When the day planner expects work to start: a worker's route is their tasks in this order.
        public var plannedStart: Date?
        // Workers
        public var personID: Int64?
        public var name: String?
        public var teams: [String]?
        public var reportedAt: Date?
        public var ageMinutes: Int?
        public var openTasks: Int?

        /// The keys as written, snake_case: a key strategy converted each of a day's thousands of keys
        /// at every encoding (a fifth of the board's time went to encoding the map).
        enum CodingKeys: String, CodingKey {
            case kind, title, status, priority, team, assignee, due, requires, late, site, name, teams
            case taskID = "task_id"
            case assigneeID = "assignee_id"
            case windowStart = "window_start"
            case windowEnd = "window_end"
            case plannedStart = "planned_start"
            case personID = "person_id"
            case reportedAt = "reported_at"
            case ageMinutes = "age_minutes"
            case openTasks = "open_tasks"
        }
    }

    public struct Filter: Sendable {
        public var teamIDs: [Int64]
        public var statuses: [TaskStatus]
        public var dueBefore: Date?
        /// Only tasks that fall on this day, each on its own wall clock (`task list --on`).
        public var on: LocalDate?

        public init(teamIDs: [Int64] = [], statuses: [TaskStatus] = [], dueBefore: Date? = nil, on: LocalDate? = nil) {
            self.teamIDs = teamIDs
            self.statuses = statuses
            self.dueBefore = dueBefore
            self.on = on
        }
    }

    /// What the manager asked to see, read from the master.
    public static func load(_ store: any BoardReads, filter: Filter, now: Date) async throws -> DispatchMap {
        let statuses = filter.statuses.isEmpty ? TaskStatus.allCases.filter { $0 != .cancelled } : filter.statuses
        let teamSet = Set(filter.teamIDs)
        let teamsOf = try await store.teamIDsByPerson()
        let tasks = try await store.listTasks(TaskFilter(statuses: statuses, dueBefore: filter.dueBefore, on: filter.on))
            .filter { Self.inScope($0, teams: teamSet, teamsOf: teamsOf) }
        let sites = Dictionary(
            uniqueKeysWithValues: try await store.locations(ids: Array(Set(tasks.compactMap(\.locationID))))
                .map { ($0.id, $0) })
        let known = try await DisplayNames.load(store)
        let (teams, names) = (known.teams, known.people)
        let workers = try await store.listPeople(role: .worker, teamID: nil).filter { worker in
            teamSet.isEmpty || !(teamsOf[worker.id] ?? []).filter(teamSet.contains).isEmpty
        }
        let positions = Dictionary(
            uniqueKeysWithValues: try await store.workerPositions(personIDs: workers.map(\.id), teamID: nil)
                .map { ($0.person.id, $0) })
        var open: [Int64: Int] = [:]
        for task in try await store.listTasks(TaskFilter(statuses: [.assigned, .inProgress])) {
            if let assignee = task.assigneeID { open[assignee, default: 0] += 1 }
        }

        var features: [Feature] = tasks.map { task in
            let site = task.locationID.flatMap { sites[$0] }
            return Feature(
                id: "task-\(task.id)",
                geometry: site.map { Point(coordinates: [$0.longitude, $0.latitude]) },
                properties: Properties(
                    kind: "task", taskID: task.id, title: task.title, status: task.status.rawValue,
                    priority: task.priority.rawValue, team: task.teamID.flatMap { teams[$0] }, assigneeID: task.assigneeID,
                    assignee: task.assigneeID.flatMap { names[$0] }, due: task.dueAt, windowStart: task.window?.start,
                    windowEnd: task.window?.end, requires: task.requiredSkills, late: task.isLate(at: now),
                    site: site.map { [$0.name, $0.address.singleLine].filter { !$0.isEmpty }.joined(separator: ", ") },
                    plannedStart: task.plannedStart
                )
            )
        }
        for worker in workers {
            let position = positions[worker.id]
            let theirTeams = (teamsOf[worker.id] ?? []).compactMap { teams[$0] }.sorted()
            features.append(
                Feature(
                    id: "worker-\(worker.id)",
                    geometry: position.map { Point(coordinates: [$0.longitude, $0.latitude]) },
                    properties: Properties(
                        kind: "worker", personID: worker.id, name: worker.displayName, teams: theirTeams,
                        reportedAt: position?.reportedAt,
                        ageMinutes: position.map { max(0, Int(now.timeIntervalSince($0.reportedAt) / 60)) },
                        openTasks: open[worker.id] ?? 0
                    )
                ))
        }
        return DispatchMap(features: features)
    }

    /// Whether `task` is in the scope of `teams` (empty: every team): it is one of theirs,
    /// or it is a personal task (no team) of one of their members.
    public static func inScope(_ task: FieldTask, teams: Set<Int64>, teamsOf: [Int64: [Int64]]) -> Bool {
        if teams.isEmpty { return true }
        if let team = task.teamID { return teams.contains(team) }
        return task.assigneeID.map { (teamsOf[$0] ?? []).contains(where: teams.contains) } ?? false
    }

    /// The collection as compact JSON (for embedding) or pretty (for people).
    public func encoded(pretty: Bool) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return TerminalText.escapedJSON(try encoder.encode(self))
    }
}

/// Teams' slugs and people's names by id, for showing ids as people read them.
public struct DisplayNames: Sendable {
    public var teams: [Int64: String] = [:]
    public var people: [Int64: String] = [:]

    public init() {}

    public static func load(_ store: any BoardReads) async throws -> DisplayNames {
        var names = DisplayNames()
        for line in try await store.listTeams() { names.teams[line.team.id] = line.team.slug }
        for person in try await store.listPeople(role: nil, teamID: nil) { names.people[person.id] = person.displayName }
        return names
    }
}
