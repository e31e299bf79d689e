import CentralStore
import Foundation
import TeamworkModel

/// The field on a map: tasks at their sites and workers at their last-known
/// positions, as an RFC 7946 GeoJSON FeatureCollection. Coordinates are
/// `[longitude, latitude]` (WGS 84). A task without a site, or a worker who has
/// never checked in, is a Feature with `"geometry": null` (RFC 7946 §3.2), so
/// nothing in scope is silently left off.
struct DispatchMap: Encodable {
    var type = "FeatureCollection"
    var features: [Feature]

    struct Point: Encodable {
        var type = "Point"
        var coordinates: [Double]
    }

    struct Feature: Encodable {
        var type = "Feature"
        /// `task-12`, `worker-3`: unique within the collection.
        var id: String
        var geometry: Point?
        var properties: Properties

        func encode(to encoder: any Encoder) throws {
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
    struct Properties: Encodable {
        var kind: String
        // Tasks
        var taskID: Int64?
        var title: String?
        var status: String?
        var priority: String?
        var team: String?
        var assigneeID: Int64?
        var assignee: String?
        var due: Date?
        var windowStart: Date?
        var windowEnd: Date?
        var requires: [String]?
        /// Overdue or past its window, still needing work.
        var late: Bool?
        var site: String?
        // Workers
        var personID: Int64?
        var name: String?
        var teams: [String]?
        var reportedAt: Date?
        var ageMinutes: Int?
        var openTasks: Int?
    }

    struct Filter {
        var teamID: Int64?
        var statuses: [TaskStatus]
        var dueBefore: Date?
    }

    /// What the manager asked to see, read from the master.
    static func load(_ store: CentralStore, filter: Filter, now: Date) async throws -> DispatchMap {
        let statuses = filter.statuses.isEmpty ? TaskStatus.allCases.filter { $0 != .cancelled } : filter.statuses
        let tasks = try await store.listTasks(TaskFilter(teamID: filter.teamID, statuses: statuses, dueBefore: filter.dueBefore))
        let sites = Dictionary(uniqueKeysWithValues: try await store.locations(ids: Array(Set(tasks.compactMap(\.locationID))))
            .map { ($0.id, $0) })
        let known = try await TaskCommand.Names.load(store)
        let (teams, names) = (known.teams, known.people)
        let workers = try await store.listPeople(role: .worker, teamID: filter.teamID)
        let positions = Dictionary(uniqueKeysWithValues: try await store.workerPositions(personIDs: workers.map(\.id))
            .map { ($0.person.id, $0) })
        let teamsOf = try await store.teamIDsByPerson()
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
                    site: site.map { [$0.name, $0.address.singleLine].filter { !$0.isEmpty }.joined(separator: ", ") }
                )
            )
        }
        for worker in workers {
            let position = positions[worker.id]
            let theirTeams = (teamsOf[worker.id] ?? []).compactMap { teams[$0] }.sorted()
            features.append(Feature(
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

    /// The collection as compact JSON (for embedding) or pretty (for people).
    func encoded(pretty: Bool) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return TerminalText.escapedJSON(try encoder.encode(self))
    }
}
