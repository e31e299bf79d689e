import Foundation
import PostgresNIO
import TeamworkModel

extension CentralStore {
    /// A person's working week (empty: none set).
    public func workingWeek(personID: Int64) async throws -> WorkingWeek {
        try await workingWeeks(personIDs: [personID])[personID] ?? WorkingWeek()
    }

    func workingWeeks(personIDs: [Int64]) async throws -> [Int64: WorkingWeek] {
        var weeks: [Int64: WorkingWeek] = [:]
        for row in try await rows(
            """
            SELECT person_id, weekday, starts::text AS starts, ends::text AS ends FROM working_hours
            WHERE person_id = ANY(\(personIDs)) ORDER BY person_id, weekday
            """)
        {
            let r = row.makeRandomAccess()
            weeks[try r["person_id"].decode(Int64.self), default: WorkingWeek()].days[Int(try r["weekday"].decode(Int16.self))] =
                try DayHours(
                    start: LocalTime(parsing: r["starts"].decode(String.self)), end: LocalTime(parsing: r["ends"].decode(String.self)))
        }
        return weeks
    }

    /// Replaces a person's working week (an empty one: none set).
    public func setWorkingWeek(personID: Int64, _ week: WorkingWeek) async throws {
        _ = try await person(id: personID)
        let days = week.days.keys.sorted()
        let starts = days.map { week.days[$0]!.start.description }
        let ends = days.map { week.days[$0]!.end.description }
        try await transaction { connection in
            try await connection.query("DELETE FROM working_hours WHERE person_id = \(personID)", logger: logger)
            try await connection.query(
                """
                INSERT INTO working_hours (person_id, weekday, starts, ends)
                SELECT \(personID), d, s::time, e::time FROM unnest(\(days.map(Int16.init))::smallint[], \(starts)::text[], \(ends)::text[]) AS u (d, s, e)
                """, logger: logger)
        }
    }

    /// A person's dated exceptions from `from` on: other hours that day, or none (a day off).
    public func workingDayExceptions(personID: Int64, from: LocalDate) async throws -> [(day: LocalDate, hours: DayHours?)] {
        try await rows(
            """
            SELECT day::text, starts::text, ends::text FROM working_day_exceptions
            WHERE person_id = \(personID) AND day >= \(from.description)::date ORDER BY day
            """
        ).map { row in
            let (day, starts, ends) = try row.decode((String, String?, String?).self)
            return (try LocalDate(parsing: day), try Self.hours(starts, ends))
        }
    }

    static func hours(_ starts: String?, _ ends: String?) throws -> DayHours? {
        guard let starts, let ends else { return nil }
        return try DayHours(start: LocalTime(parsing: starts), end: LocalTime(parsing: ends))
    }

    /// Sets a person's hours on one day (nil: a day off), in place of their week's.
    public func setWorkingDay(personID: Int64, day: LocalDate, hours: DayHours?) async throws {
        _ = try await person(id: personID)
        try await transaction { connection in
            try await connection.query(
                """
                INSERT INTO working_day_exceptions (person_id, day, starts, ends)
                VALUES (\(personID), \(day.description)::date, \(hours?.start.description)::time, \(hours?.end.description)::time)
                ON CONFLICT (person_id, day) DO UPDATE SET starts = excluded.starts, ends = excluded.ends
                """, logger: logger)
        }
    }

    /// Removes a person's exception for one day; false when there was none.
    public func removeWorkingDay(personID: Int64, day: LocalDate) async throws -> Bool {
        try await transaction { connection in
            try await connection.query(
                "DELETE FROM working_day_exceptions WHERE person_id = \(personID) AND day = \(day.description)::date RETURNING 1",
                logger: logger
            ).collect().count == 1
        }
    }

    /// Records an absence.
    public func addAbsence(personID: Int64, from: Date, to: Date, reason: AbsenceReason, note: String) async throws -> Absence {
        guard from < to else { throw TeamworkError.invalid("an absence ends after it starts") }
        guard to.timeIntervalSince(from) <= 366 * 86400 else { throw TeamworkError.invalid("an absence is at most a year long") }
        guard note.count <= 200 else { throw TeamworkError.invalid("an absence's note has at most 200 characters") }
        _ = try await person(id: personID)
        return try await transaction { connection in
            // A second absence the first already covers says nothing new: refused, naming the first.
            let covering = try await connection.query(
                """
                SELECT a.id FROM absences a WHERE a.person_id = \(personID) AND a.starts_at <= \(from) AND a.ends_at >= \(to)
                ORDER BY a.id LIMIT 1
                """, logger: logger
            ).collect()
            if let first = covering.first {
                throw TeamworkError.conflict("they are away then already (absence \(try first.decode(Int64.self))): nothing added")
            }
            let row = try await connection.query(
                """
                INSERT INTO absences AS a (person_id, starts_at, ends_at, reason, note, created_by)
                VALUES (\(personID), \(from), \(to), \(reason.rawValue), \(note), \(actorID))
                RETURNING \(unescaped: Self.absenceColumns)
                """, logger: logger
            ).collect()
            return try Self.absence(row[0])
        }
    }

    /// Absences that end after `from`, of one person, of a team's members, or of everyone.
    public func absences(personID: Int64? = nil, teamID: Int64? = nil, endingAfter from: Date) async throws -> [Absence] {
        try await rows(
            """
            SELECT \(unescaped: Self.absenceColumns) FROM absences a
            WHERE a.ends_at > \(from)
              AND (\(personID)::bigint IS NULL OR a.person_id = \(personID))
              AND (\(teamID)::bigint IS NULL OR EXISTS (
                   SELECT 1 FROM team_memberships m WHERE m.person_id = a.person_id AND m.team_id = \(teamID)))
            ORDER BY a.starts_at, a.id
            """
        ).map(Self.absence)
    }

    /// Removes an absence (ended early, or entered by mistake).
    public func removeAbsence(id: Int64) async throws -> Absence {
        try await transaction { connection in
            let rows = try await connection.query(
                "DELETE FROM absences AS a WHERE a.id = \(id) RETURNING \(unescaped: Self.absenceColumns)", logger: logger
            ).collect()
            guard let row = rows.first else { throw TeamworkError.notFound("no absence with id \(id)") }
            return try Self.absence(row)
        }
    }

    /// An absence's columns (of `absences a`), read by name by ``absence(_:)``.
    static let absenceColumns =
        "a.id AS absence_id, a.person_id AS absence_person_id, a.starts_at AS absence_starts_at, a.ends_at AS absence_ends_at, a.reason AS absence_reason, a.note AS absence_note"

    static func absence(_ row: PostgresRow) throws -> Absence {
        let r = row.makeRandomAccess()
        return Absence(
            id: try r["absence_id"].decode(Int64.self), personID: try r["absence_person_id"].decode(Int64.self),
            startsAt: try r["absence_starts_at"].decode(Date.self), endsAt: try r["absence_ends_at"].decode(Date.self),
            reason: try r.enumValue("absence_reason", AbsenceReason.self), note: try r["absence_note"].decode(String.self))
    }

    /// What says when each of `personIDs` works on `day` (on `zone`'s clock): their week, their
    /// exception that day (`.some(nil)`: a day off) and the absences touching the day. Three queries.
    public func workTimes(
        personIDs ids: [Int64], day: LocalDate, zone: Zone
    ) async throws -> [Int64: (week: WorkingWeek, exception: DayHours??, absences: [Absence])] {
        try await workTimes(personIDs: ids, days: [day], zone: zone).mapValues { ($0.week, $0.exceptions[day], $0.absences) }
    }

    /// What says when each of `personIDs` works on `days` (on `zone`'s clock): their week, their
    /// exceptions on those days and the absences touching them. Three queries.
    public func workTimes(personIDs ids: [Int64], days: [LocalDate], zone: Zone) async throws -> [Int64: WorkTime] {
        guard let first = days.min(), let last = days.max() else { return [:] }
        let weeks = try await workingWeeks(personIDs: ids)
        var exceptions: [Int64: [LocalDate: DayHours?]] = [:]
        for row in try await rows(
            """
            SELECT person_id, day::text, starts::text, ends::text FROM working_day_exceptions
            WHERE person_id = ANY(\(ids)) AND day BETWEEN \(first.description)::date AND \(last.description)::date
            """)
        {
            let (person, day, starts, ends) = try row.decode((Int64, String, String?, String?).self)
            exceptions[person, default: [:]][try LocalDate(parsing: day)] = .some(try Self.hours(starts, ends))
        }
        let (start, end) = (zone.day(first).start, zone.day(last).end)
        var away: [Int64: [Absence]] = [:]
        for row in try await rows(
            """
            SELECT \(unescaped: Self.absenceColumns) FROM absences a
            WHERE a.person_id = ANY(\(ids)) AND a.ends_at > \(start) AND a.starts_at < \(end)
            ORDER BY a.starts_at, a.id
            """)
        {
            let absence = try Self.absence(row)
            away[absence.personID, default: []].append(absence)
        }
        var times: [Int64: WorkTime] = [:]
        for id in ids {
            times[id] = WorkTime(week: weeks[id] ?? WorkingWeek(), exceptions: exceptions[id] ?? [:], absences: away[id] ?? [])
        }
        return times
    }

    /// Refuses a location that is not a site (a depot or a worker's own place must be one).
    func requireSite(_ id: Int64?) async throws {
        guard let id else { return }
        guard try await location(id: id).kind == .site else {
            throw TeamworkError.invalid("location \(id) is a person's position, not a site")
        }
    }

    /// Everything planning `teamID`'s `day` reads, in a few queries: its open work that day (on
    /// the team's clock), its active members with their weeks, exceptions that day, absences
    /// touching the day and last check-ins, and every site these name.
    public func dayFacts(teamID: Int64, day: LocalDate) async throws -> DayFacts {
        let team = try await team(id: teamID)
        let zone = Zone.reading(team.timeZone)
        let tasks = try await listTasks(TaskFilter(teamID: team.id, statuses: [.open, .assigned, .inProgress], on: day))
        let people = try await members(teamID: team.id).map(\.person).filter(\.isActive)
        let ids = people.map(\.id)
        let times = try await workTimes(personIDs: ids, day: day, zone: zone)
        let positions = try await workerPositions(personIDs: ids)
        let wanted = Set(tasks.compactMap(\.locationID) + people.compactMap(\.homeLocationID) + [team.depotLocationID].compactMap { $0 })
        let sites = try await rows(
            "SELECT \(unescaped: Columns.location) FROM locations l WHERE l.id = ANY(\(Array(wanted)))"
        ).map(Location.init(row:))
        let members = people.map { person in
            let time = times[person.id] ?? (WorkingWeek(), DayHours??.none, [])
            return DayFacts.Member(
                person: person, week: time.week, exception: time.exception, absences: time.absences,
                position: positions.first { $0.person.id == person.id }.map { ($0.latitude, $0.longitude, $0.reportedAt) })
        }
        return DayFacts(
            team: team, day: day, tasks: tasks, members: members,
            sites: Dictionary(uniqueKeysWithValues: sites.map { ($0.id, $0) }))
    }
}

extension CentralStore {
    /// Applies a day plan of `teamID` in one transaction, as the signed-in manager: each task to
    /// its worker with its expected start, or back to the team; the history of each says "planned".
    /// Nothing changes unless every task is still of the team, still open or started, and at the
    /// version the plan was made from (else: plan again). Returns the tasks as they now are.
    public func applyDayPlan(teamID: Int64, day: LocalDate, _ plan: [PlannedAssignment]) async throws -> [FieldTask] {
        guard !plan.isEmpty else { return [] }
        guard plan.count <= 5000 else { throw TeamworkError.invalid("a day plan has at most 5000 tasks") }
        guard Set(plan.map(\.taskID)).count == plan.count else { throw TeamworkError.invalid("a day plan names each task once") }
        let ids = plan.map(\.taskID)
        let versions = plan.map { Int32($0.version) }
        // Text with '' for none: arrays of optional values do not travel as parameters.
        let people = plan.map { $0.assigneeID.map(String.init) ?? "" }
        let starts = plan.map { $0.plannedStart.map { String($0.timeIntervalSince1970) } ?? "" }
        return try await transaction { connection in
            _ = try await connection.query("SELECT teamwork_mark('planned', \("day plan \(day)"))", logger: logger).collect()
            let rows = try await connection.query(
                """
                WITH wanted AS (
                    SELECT u.id, u.version, nullif(u.assignee_id, '')::bigint AS assignee_id,
                           to_timestamp(nullif(u.planned_start, '')::double precision) AS planned_start
                      FROM unnest(\(ids)::bigint[], \(versions)::integer[], \(people)::text[], \(starts)::text[])
                        AS u (id, version, assignee_id, planned_start)
                )
                UPDATE tasks AS k SET
                    assignee_id = w.assignee_id,
                    planned_start = w.planned_start,
                    status = CASE WHEN k.assignee_id IS DISTINCT FROM w.assignee_id THEN 'open' ELSE k.status END,
                    started_at = CASE WHEN k.assignee_id IS DISTINCT FROM w.assignee_id THEN NULL ELSE k.started_at END
                FROM wanted w
                WHERE k.id = w.id AND k.version = w.version AND k.team_id = \(teamID)
                  AND k.status IN ('open', 'assigned', 'in_progress')
                  AND (k.status <> 'in_progress' OR k.assignee_id IS NOT DISTINCT FROM w.assignee_id)
                RETURNING \(unescaped: Columns.task)
                """, logger: logger
            ).collect()
            guard rows.count == plan.count else {
                let done = try Set(rows.map { try FieldTask(row: $0).id })
                let stale = ids.filter { !done.contains($0) }.prefix(5).map { "#\($0)" }.joined(separator: ", ")
                throw TeamworkError.conflict(
                    "the day changed since the plan was made (\(stale) changed, closed or left the team): nothing was applied; plan again")
            }
            return try rows.map(FieldTask.init(row:)).sorted { $0.id < $1.id }
        }
    }
}
