import Foundation
import PostgresNIO
import TeamworkModel

extension CentralStore {
    /// Time on task `id` (sql/0042): a line per person and kind, removed entries (of no length) left out.
    public func timeEntries(ofTask id: Int64) async throws -> [TimeEntry] {
        _ = try await task(id: id)
        return try await rows(
            """
            SELECT \(unescaped: Self.timeColumns) FROM time_entries e LEFT JOIN people w ON w.id = e.person_id
            WHERE e.task_id = \(id) AND (e.ended_at IS NULL OR e.ended_at > e.started_at)
            ORDER BY e.started_at, e.person_id, e.kind
            """
        ).map { try TimeEntry(row: PostgresRandomAccessRow($0)) }
    }

    /// A line of `time_entries e` as ``TimeEntry`` reads it (with `people w` joined).
    static let timeColumns = """
        e.task_id, e.person_id, nullif(btrim(w.first_name || ' ' || w.last_name), '') AS person_name, e.kind, e.started_at,
        e.ended_at, e.source
        """

    /// Week `week` (`2026-W44`) of time on the job, per person and day, against their working hours:
    /// everyone active in a team (of team `team` when given) and anyone else with time that week. Each
    /// entry counts on the days of its task's clock it lies in, as the time that passed; someone with
    /// no working week of their own is expected `usual` hours Monday to Friday.
    public func timesheet(week: String, team: Int64? = nil, usual: DayHours = .usual) async throws -> Timesheet {
        let monday = try Timesheet.monday(ofWeek: week)
        let days = (0..<7).map { monday.adding(days: $0) }
        let first = monday.description
        var seconds: [Int64: [LocalDate: (work: Int, travel: Int)]] = [:]
        var names: [Int64: String] = [:]
        var open: [Int64: Int] = [:]
        for row in try await rows(
            """
            WITH days AS (SELECT (\(first)::date + i) AS day FROM generate_series(0, 6) AS i),
            -- With a team: its members, whoever has left since included (their week still counts).
            team_people AS (SELECT DISTINCT m.person_id FROM team_memberships m WHERE m.team_id = \(team)),
            members AS (
                SELECT DISTINCT m.person_id FROM team_memberships m JOIN people p ON p.id = m.person_id
                WHERE p.deactivated_at IS NULL AND (\(team)::bigint IS NULL OR m.team_id = \(team))
            ),
            entries AS (
                -- Whole minutes (TimeOnJob.minutes): a day's share and the entry's own minutes add up exactly.
                SELECT e.person_id, e.kind, date_trunc('minute', e.started_at) AS started_at,
                       date_trunc('minute', e.ended_at) AS ended_at, t.time_zone
                FROM time_entries e JOIN tasks t ON t.id = e.task_id
                WHERE e.ended_at > e.started_at
                  -- Every zone's day lies within two of UTC's, and an entry lasts at most a day: the range
                  -- narrows (on the index of starts), the task's own clock decides.
                  AND e.started_at >= ((\(first)::date - 3)::timestamp AT TIME ZONE 'UTC')
                  AND e.started_at < ((\(first)::date + 9)::timestamp AT TIME ZONE 'UTC')
                  AND e.ended_at > ((\(first)::date - 2)::timestamp AT TIME ZONE 'UTC')
                  AND (\(team)::bigint IS NULL OR e.person_id IN (SELECT person_id FROM team_people))
            ),
            spans AS (
                SELECT e.person_id, d.day, e.kind,
                       extract(epoch FROM least(e.ended_at, (d.day + 1)::timestamp AT TIME ZONE e.time_zone)
                                          - greatest(e.started_at, d.day::timestamp AT TIME ZONE e.time_zone)) AS seconds
                FROM entries e JOIN days d ON e.started_at < (d.day + 1)::timestamp AT TIME ZONE e.time_zone
                                          AND e.ended_at > d.day::timestamp AT TIME ZONE e.time_zone
            ),
            sums AS (SELECT person_id, day::text AS day, kind, sum(seconds)::bigint AS seconds FROM spans GROUP BY 1, 2, 3),
            running AS (
                SELECT e.person_id, count(*) AS open FROM time_entries e
                WHERE e.ended_at IS NULL AND e.started_at >= ((\(first)::date - 1)::timestamp AT TIME ZONE 'UTC')
                  AND e.started_at < ((\(first)::date + 8)::timestamp AT TIME ZONE 'UTC')
                  AND (\(team)::bigint IS NULL OR e.person_id IN (SELECT person_id FROM team_people))
                GROUP BY 1
            ),
            everyone AS (SELECT person_id FROM members UNION SELECT person_id FROM sums UNION SELECT person_id FROM running)
            SELECT p.id AS person_id, btrim(p.first_name || ' ' || p.last_name) AS name, s.day, s.kind, s.seconds,
                   coalesce(r.open, 0) AS open
            FROM everyone v JOIN people p ON p.id = v.person_id
                 LEFT JOIN sums s ON s.person_id = p.id LEFT JOIN running r ON r.person_id = p.id
            ORDER BY p.last_name, p.first_name, p.id
            """)
        {
            let r = PostgresRandomAccessRow(row)
            let person = try r["person_id"].decode(Int64.self)
            names[person] = try r["name"].decode(String.self)
            open[person] = Int(try r["open"].decode(Int64.self))
            if seconds[person] == nil { seconds[person] = [:] }
            guard let day = try r["day"].decode(String?.self), let kind = try r["kind"].decode(String?.self) else { continue }
            let amount = Int(try r["seconds"].decode(Int64.self))
            let date = try LocalDate(parsing: day)
            var sums = seconds[person]![date] ?? (0, 0)
            if kind == TimeOnJob.Kind.work.rawValue { sums.work += amount } else { sums.travel += amount }
            seconds[person]![date] = sums
        }
        let order = try await rows(
            "SELECT id FROM people WHERE id = ANY(\(Array(names.keys))) ORDER BY last_name, first_name, id"
        ).map { try $0.decode(Int64.self) }
        let weeks = try await workingWeeks(personIDs: order)
        var exceptions: [Int64: [LocalDate: DayHours?]] = [:]
        for row in try await rows(
            """
            SELECT person_id, day::text, starts::text, ends::text FROM working_day_exceptions
            WHERE person_id = ANY(\(order)) AND day BETWEEN \(first)::date AND \(first)::date + 6
            """)
        {
            let (person, day, starts, ends) = try row.decode((Int64, String, String?, String?).self)
            exceptions[person, default: [:]][try LocalDate(parsing: day)] = .some(try Self.hours(starts, ends))
        }
        let people = order.map { person in
            let week = weeks[person] ?? WorkingWeek()
            return Timesheet.Person(
                personID: person, name: names[person] ?? String(person),
                days: days.map { date in
                    let hours: DayHours? =
                        if let exception = exceptions[person]?[date] { exception } else if week.isEmpty {
                            date.weekday <= 5 ? usual : nil
                        } else { week.days[date.weekday] }
                    let sums = seconds[person]?[date] ?? (0, 0)
                    return Timesheet.Day(
                        date: date, work: sums.work / 60, travel: sums.travel / 60,
                        expected: hours.map { ($0.end.seconds - $0.start.seconds) / 60 } ?? 0)
                }, open: open[person] ?? 0)
        }
        return Timesheet(week: week, days: days, people: people, closed: try await payrollClosed())
    }

    /// The last period payroll closed, or `nil` when none is.
    public func payrollClosed() async throws -> PayrollClose? {
        try await rows(
            """
            SELECT c.week, c.through::text, nullif(btrim(p.first_name || ' ' || p.last_name), '') AS name, c.closed_at
            FROM payroll_closes c LEFT JOIN people p ON p.id = c.closed_by ORDER BY c.through DESC, c.id DESC LIMIT 1
            """
        ).first.map { row in
            let (week, through, name, at) = try row.decode((String, String, String?, Date).self)
            return PayrollClose(week: week, through: try LocalDate(parsing: through), closedBy: name, closedAt: at)
        }
    }

    /// Closes payroll through the Sunday of ISO week `week`, as the acting manager: from then on no time
    /// entry on those days is recorded, changed or removed, by a worker or a manager. Forward only: a
    /// week on or before the last one closed is refused, nothing changed.
    public func closePayroll(week: String) async throws -> PayrollClose {
        let sunday = try Timesheet.monday(ofWeek: week).adding(days: 6)
        try await transaction { connection in
            // Collected: an error the function raises comes with its rows.
            _ = try await connection.query(
                "SELECT teamwork_close_payroll(\(week), \(sunday.description)::date)", logger: logger
            ).collect()
        }
        guard let closed = try await payrollClosed() else { throw TeamworkError.invalid("payroll was not closed") }
        return closed
    }
}

extension TimeEntry {
    init(row r: PostgresRandomAccessRow) throws {
        let kind = try r["kind"].decode(String.self)
        guard let known = TimeOnJob.Kind(rawValue: kind) else { throw TeamworkError.invalid("a time entry of an unknown kind: \(kind)") }
        self.init(
            taskID: try r["task_id"].decode(Int64.self), personID: try r["person_id"].decode(Int64.self),
            personName: try r["person_name"].decode(String?.self), kind: known,
            startedAt: try r["started_at"].decode(Date.self), endedAt: try r["ended_at"].decode(Date?.self),
            source: try r["source"].decode(String.self))
    }
}

extension CentralStore {
    /// Sets, as the acting manager, `personID`'s entry of `kind` on task `taskID` to `start`–`end` (equal
    /// times remove it): a correction, completed tasks included, in the task's history with the
    /// manager's name; a completed task's costs go to billing again (`task.costed`). Returns the
    /// task's entries after it.
    public func correctTime(taskID: Int64, personID: Int64, kind: TimeOnJob.Kind, start: Date, end: Date) async throws -> [TimeEntry] {
        let value = TimeOnJob.value(start: start, end: end)
        if let problem = TimeOnJob.problem(kind: kind.rawValue, value: value, receivedAt: Date()) { throw TeamworkError.invalid(problem) }
        try await transaction { connection in
            // Collected: an error the function raises comes with its rows.
            _ = try await connection.query(
                "SELECT teamwork_correct_time(\(taskID), \(personID), \(kind.rawValue), \(value))", logger: logger
            ).collect()
        }
        return try await timeEntries(ofTask: taskID)
    }
}

extension CentralStore {
    /// Every entry of time on the tasks completed from `from` to `to` (both days, each task on its own
    /// clock), of team `team` when given: what invoicing reads of the labour (`report labour`).
    public func labour(from: LocalDate, to: LocalDate, team: Int64? = nil) async throws -> [TimeUse] {
        try Self.checkPeriod(from, to)
        return try await rows(
            """
            SELECT d.task_id, d.title, d.team, d.customer, d.completed_on::text, \(unescaped: Self.timeColumns)
            FROM teamwork_completed_tasks(\(from.description)::date, \(to.description)::date, \(team)::bigint) d
                 JOIN (time_entries e LEFT JOIN people w ON w.id = e.person_id) ON e.task_id = d.task_id
            WHERE e.ended_at > e.started_at
            ORDER BY d.completed_at, d.task_id, e.started_at, e.person_id, e.kind
            """
        ).map { row in
            let r = PostgresRandomAccessRow(row)
            return TimeUse(
                taskID: try r["task_id"].decode(Int64.self), title: try r["title"].decode(String.self),
                team: try r["team"].decode(String?.self), customer: try r["customer"].decode(String?.self),
                completedOn: try r["completed_on"].decode(String.self), entry: try TimeEntry(row: r))
        }
    }
}
