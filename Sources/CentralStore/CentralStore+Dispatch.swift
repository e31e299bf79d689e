import Foundation
import PostgresNIO
import TeamworkModel

/// A worker's last-known position, as a manager sees it.
public struct WorkerPosition: Sendable, Codable, Equatable {
    public var person: Person
    public var teamIDs: [Int64]
    public var latitude: Double
    public var longitude: Double
    public var reportedAt: Date
}

extension CentralStore {
    /// Ranks who should take task `taskID` (see ``Ranking``): the members of
    /// `teamID` (default: the task's team), or every worker for a task with no
    /// team. The person the task is already assigned to is a candidate too.
    public func suggest(taskID: Int64, teamID: Int64? = nil, limit: Int? = nil, now: Date = Date()) async throws -> Ranking {
        let task = try await task(id: taskID)
        var site: Location?
        if let locationID = task.locationID { site = try await location(id: locationID) }
        var people: [Person]
        if let team = teamID ?? task.teamID {
            people = try await listPeople(teamID: team)
        } else {
            people = try await listPeople(role: .worker)
        }
        // Someone who has left is nobody's candidate.
        people = people.filter(\.isActive)
        let ids = people.map(\.id)
        var positions: [Int64: (latitude: Double, longitude: Double, reportedAt: Date)] = [:]
        for position in try await workerPositions(personIDs: ids) {
            positions[position.person.id] = (position.latitude, position.longitude, position.reportedAt)
        }
        var open: [Int64: [Priority]] = [:]
        var clashes: [Int64: Int] = [:]
        for row in try await rows(
            """
            SELECT k.assignee_id, k.priority,
                   k.window_start < \(task.window?.end) AND k.window_end > \(task.window?.start)
              FROM tasks k
             WHERE k.assignee_id = ANY(\(ids)) AND k.status IN ('assigned', 'in_progress') AND k.id <> \(taskID)
            """
        ) {
            let (person, priority, clash) = try row.decode((Int64, String, Bool?).self)
            open[person, default: []].append(Priority(rawValue: priority) ?? .normal)
            if clash == true { clashes[person, default: 0] += 1 }
        }
        // Who works when it is to be done: the planner's rule, each day of the span on the task's clock
        // (someone with no week set works any hour; only absences and day-offs count).
        let span = Availability.span(of: task, now: now)
        let days = Availability.days(of: span, zone: task.zone)
        let times = try await workTimes(personIDs: ids, days: days, zone: task.zone)
        var ranking = Ranking(
            task: task, site: site.map { ($0.latitude, $0.longitude) },
            people: people.map { person in
                let time = times[person.id] ?? WorkTime(week: WorkingWeek(), exceptions: [:], absences: [])
                return Ranking.Input(
                    person: person, position: positions[person.id], openPriorities: open[person.id] ?? [],
                    windowClashes: clashes[person.id] ?? 0,
                    unavailable: Availability.unavailable(
                        days.map { time.day($0, zone: task.zone, otherwise: .allDay) }, absences: time.absences, span: span,
                        zone: task.zone))
            },
            now: now
        )
        if let limit { ranking.candidates = Array(ranking.candidates.prefix(limit)) }
        return ranking
    }

    /// The other tasks still to be done of the task's assignee that it cannot be kept beside
    /// (``FieldTask/clash(_:_:minutes:)``): a double booking.
    public func doubleBookings(of taskID: Int64) async throws -> [FieldTask] {
        let task = try await task(id: taskID)
        guard task.assigneeID != nil, task.window != nil || task.plannedStart != nil else { return [] }
        // Those near enough in time to clash (a visit lasts at most 12 hours), read once; the rule decides.
        let others = try await rows(
            """
            SELECT \(unescaped: Columns.task) FROM tasks k JOIN tasks t ON t.id = \(taskID)
            WHERE k.assignee_id = t.assignee_id AND k.id <> t.id AND k.status IN ('assigned', 'in_progress')
              AND coalesce(k.planned_start, k.window_start) < coalesce(t.window_end, t.planned_start) + interval '12 hours'
              AND coalesce(k.window_end, k.planned_start) + interval '12 hours' > coalesce(t.planned_start, t.window_start)
            ORDER BY coalesce(k.planned_start, k.window_start), k.id
            """
        ).map(FieldTask.init(row:))
        var teams: [Int64: Team] = [:]
        for id in Set(([task] + others).compactMap(\.teamID)) { teams[id] = try await team(id: id) }
        return others.filter { FieldTask.clash(task, $0) { $0.minutesOnSite(team: $0.teamID.flatMap { teams[$0] }) } }
    }

    /// Last-known positions of people, with their teams; all people when `personIDs` is nil.
    public func workerPositions(personIDs: [Int64]? = nil, teamID: Int64? = nil) async throws -> [WorkerPosition] {
        try await rows(
            """
            SELECT \(unescaped: Columns.person), l.latitude AS at_latitude, l.longitude AS at_longitude,
                   coalesce(p.last_seen_at, l.updated_at) AS reported_at,
                   coalesce((SELECT array_agg(m.team_id ORDER BY m.team_id) FROM team_memberships m WHERE m.person_id = p.id), '{}') AS team_ids
              FROM locations l JOIN people p ON p.id = l.person_id
             WHERE l.kind = 'person'
               AND (\(personIDs)::bigint[] IS NULL OR p.id = ANY(\(personIDs)))
               AND (\(teamID)::bigint IS NULL OR EXISTS (
                    SELECT 1 FROM team_memberships m WHERE m.person_id = p.id AND m.team_id = \(teamID)))
             ORDER BY p.id
            """
        ).map { row in
            let r = PostgresRandomAccessRow(row)
            return WorkerPosition(
                person: try Person(row: row), teamIDs: try r["team_ids"].decode([Int64].self),
                latitude: try r["at_latitude"].decode(Double.self), longitude: try r["at_longitude"].decode(Double.self),
                reportedAt: try r["reported_at"].decode(Date.self)
            )
        }
    }

    /// Every person's teams, by person id.
    public func teamIDsByPerson() async throws -> [Int64: [Int64]] {
        var result: [Int64: [Int64]] = [:]
        for row in try await rows("SELECT person_id, team_id FROM team_memberships ORDER BY person_id, team_id") {
            let (person, team) = try row.decode((Int64, Int64).self)
            result[person, default: []].append(team)
        }
        return result
    }
}
