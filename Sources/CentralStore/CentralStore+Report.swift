import Foundation
import PostgresNIO
import TeamworkModel

extension CentralStore {
    /// Counts by status and team, overdue tasks (most overdue first) and tasks due soon (soonest
    /// first), each list at most `limit` long and counted in full, and the completion rate, read in
    /// one snapshot.
    public func report(now: Date = Date(), limit: Int = 50) async throws -> Report {
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
            let lines = try await connection.query(
                """
                SELECT t.slug, k.status, count(*),
                       count(*) FILTER (WHERE teamwork_late_from(k.due_at, k.window_end) < \(now) AND k.status NOT IN ('completed', 'cancelled'))
                FROM tasks k LEFT JOIN teams t ON t.id = k.team_id
                GROUP BY t.slug, k.status
                ORDER BY t.slug NULLS LAST, k.status
                """,
                logger: logger
            ).collect()
            var byStatus: [String: Int] = [:]
            var teams: [Report.TeamLine] = []
            var total = 0
            for row in lines {
                let (slug, status, count, overdue) = try row.decode((String?, String, Int, Int).self)
                byStatus[status, default: 0] += count
                total += count
                if let last = teams.last, last.teamSlug == slug {
                    teams[teams.count - 1].counts[status] = count
                    teams[teams.count - 1].total += count
                    teams[teams.count - 1].overdue += overdue
                } else {
                    teams.append(Report.TeamLine(teamSlug: slug, counts: [status: count], total: count, overdue: overdue))
                }
            }
            let overdue = try await connection.query(
                """
                SELECT \(unescaped: Columns.task) FROM tasks k
                WHERE teamwork_late_from(k.due_at, k.window_end) < \(now) AND k.status NOT IN ('completed', 'cancelled')
                ORDER BY teamwork_late_from(k.due_at, k.window_end), k.id LIMIT \(limit)
                """,
                logger: logger
            ).collect().map(FieldTask.init(row:))
            let field = try await connection.query(
                "SELECT count(*)::int, count(*) FILTER (WHERE conflict IS NOT NULL AND resolved_at IS NULL)::int FROM field_changes",
                logger: logger
            ).collect()
            let (fieldChanges, openConflicts) = try field[0].decode((Int, Int).self)
            let completed = byStatus["completed"] ?? 0
            let countable = total - (byStatus["cancelled"] ?? 0)
            var report = Report(
                generatedAt: now, countsByStatus: byStatus, teams: teams, overdueTasks: overdue, total: total,
                completionRate: countable > 0 ? Double(completed) / Double(countable) : nil,
                fieldChanges: fieldChanges, openConflicts: openConflicts
            )
            let soon = now.addingTimeInterval(Double(report.dueSoonHours) * 3600)
            report.dueSoon = try await connection.query(
                """
                SELECT \(unescaped: Columns.task) FROM tasks k
                WHERE NOT coalesce(teamwork_late_from(k.due_at, k.window_end) < \(now), false)
                  AND least(k.due_at, k.window_start) < \(soon) AND k.status NOT IN ('completed', 'cancelled')
                ORDER BY least(k.due_at, k.window_start), k.id LIMIT \(limit)
                """,
                logger: logger
            ).collect().map(FieldTask.init(row:))
            (report.overdueCount, report.dueSoonCount) = try await connection.query(
                """
                SELECT count(*) FILTER (WHERE teamwork_late_from(k.due_at, k.window_end) < \(now))::int,
                       count(*) FILTER (WHERE NOT coalesce(teamwork_late_from(k.due_at, k.window_end) < \(now), false)
                                          AND least(k.due_at, k.window_start) < \(soon))::int
                FROM tasks k WHERE k.status NOT IN ('completed', 'cancelled')
                """,
                logger: logger
            ).collect()[0].decode((Int, Int).self)
            report.workload = try await connection.query(
                """
                SELECT p.id, p.first_name || ' ' || p.last_name,
                       count(*) FILTER (WHERE k.status = 'assigned')::int, count(*) FILTER (WHERE k.status = 'in_progress')::int,
                       count(*) FILTER (WHERE k.priority = 'urgent')::int, count(*) FILTER (WHERE teamwork_late_from(k.due_at, k.window_end) < \(now))::int
                FROM tasks k JOIN people p ON p.id = k.assignee_id
                WHERE k.status IN ('assigned', 'in_progress')
                GROUP BY p.id, p.first_name, p.last_name
                ORDER BY count(*) DESC, p.id
                """,
                logger: logger
            ).collect().map { row in
                let (id, name, open, inProgress, urgent, late) = try row.decode((Int64, String, Int, Int, Int, Int).self)
                return Report.Workload(personID: id, name: name, open: open, inProgress: inProgress, urgent: urgent, overdue: late)
            }
            // Assigned: the last history entry that gave the task to someone before the entry that completed
            // it, in the order the master recorded them (a device's clock may be behind the server's, so
            // not by time); a completion stamped before its assignment counts as no time at all. A task
            // that was never assigned before it was completed (a worker completed a free task) counts from
            // its creation: every completion in the window is counted once.
            let since = now.addingTimeInterval(-Double(report.turnaroundDays) * 86400)
            report.turnaround = try await connection.query(
                """
                SELECT t.slug, count(*)::int,
                       percentile_cont(0.5) WITHIN GROUP (
                           ORDER BY greatest(0, extract(epoch FROM k.completed_at - coalesce(a.assigned_at, k.created_at))) / 3600)
                FROM tasks k
                LEFT JOIN teams t ON t.id = k.team_id
                LEFT JOIN LATERAL (
                    SELECT h.changed_at AS assigned_at FROM task_history h
                    WHERE h.task_id = k.id
                      AND h.changes ? 'assignee_id' AND jsonb_typeof(h.changes -> 'assignee_id' -> 'new') = 'number'
                      AND h.id < coalesce((SELECT max(c.id) FROM task_history c
                                           WHERE c.task_id = k.id AND c.changes -> 'status' ->> 'new' = 'completed'),
                                          9223372036854775807)
                    ORDER BY h.id DESC LIMIT 1
                ) a ON true
                WHERE k.status = 'completed' AND k.completed_at >= \(since)
                GROUP BY t.slug
                ORDER BY t.slug NULLS LAST
                """,
                logger: logger
            ).collect().map { row in
                let (slug, count, hours) = try row.decode((String?, Int, Double).self)
                return Report.Turnaround(teamSlug: slug, completed: count, medianHours: hours)
            }
            report.plans = try await connection.query(
                """
                SELECT pl.id, pl.title,
                       (SELECT count(*) FROM tasks k WHERE k.plan_id = pl.id AND NOT k.plan_superseded
                          AND k.due_at >= \(now) AND k.due_at < \(now.addingTimeInterval(7 * 86_400))),
                       last.due_at, coalesce(last.status NOT IN ('completed', 'cancelled'), false)
                FROM plans pl
                LEFT JOIN LATERAL (
                    SELECT k.due_at, k.status FROM tasks k
                    WHERE k.plan_id = pl.id AND NOT k.plan_superseded AND k.due_at < \(now)
                    ORDER BY k.due_at DESC LIMIT 1
                ) last ON true
                ORDER BY pl.id
                """,
                logger: logger
            ).collect().map { row in
                let (id, title, due, lastDue, missed) = try row.decode((Int64, String, Int, Date?, Bool).self)
                return Report.PlanLine(planID: id, title: title, dueThisWeek: due, lastDue: lastDue, lastMissed: missed)
            }
            report.checklists = try await connection.query(
                """
                SELECT c.name, count(*)::int,
                       count(*) FILTER (WHERE cardinality(teamwork_checklist_missing(v.items, k.answers)) > 0)::int,
                       count(*) FILTER (WHERE cardinality(teamwork_checklist_failed(v.items, k.answers)) > 0)::int
                FROM tasks k
                JOIN checklist_versions v ON v.checklist_id = k.checklist_id AND v.version = k.checklist_version
                JOIN checklists c ON c.id = k.checklist_id
                WHERE k.status = 'completed' AND k.completed_at >= \(since)
                GROUP BY c.name ORDER BY c.name
                """,
                logger: logger
            ).collect().map { row in
                let (name, completed, missing, failed) = try row.decode((String, Int, Int, Int).self)
                return Report.ChecklistLine(name: name, completed: completed, withMissing: missing, withFailed: failed)
            }
            return report
        }
    }

    /// Creates `name` on the server if it does not exist. Needs a connection to
    /// another database of the same server (usually `postgres`) and CREATEDB.
    public func createDatabaseIfMissing(_ name: String) async throws -> Bool {
        guard try await !databaseExists(name) else { return false }
        try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(Self.quoted(name))"), logger: logger)
        return true
    }

    /// Whether the server holds a database named `name`.
    public func databaseExists(_ name: String) async throws -> Bool {
        try await !rows("SELECT 1 FROM pg_database WHERE datname = \(name)").isEmpty
    }

    /// Creates `name` as a copy of `template` (which nobody may be connected to). For tests.
    public func createDatabase(_ name: String, copying template: String) async throws {
        try await connection.query(
            PostgresQuery(unsafeSQL: "CREATE DATABASE \(Self.quoted(name)) TEMPLATE \(Self.quoted(template))"), logger: logger)
    }

    /// Renames database `name` to `newName` (nobody may be connected to it). For tests.
    public func renameDatabase(_ name: String, to newName: String) async throws {
        try await connection.query(
            PostgresQuery(unsafeSQL: "ALTER DATABASE \(Self.quoted(name)) RENAME TO \(Self.quoted(newName))"), logger: logger)
    }

    static func quoted(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
}

extension CentralStore {
    /// Drops `name`, disconnecting anyone still using it. For tests and tooling.
    public func dropDatabase(_ name: String) async throws {
        try await connection.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(Self.quoted(name)) WITH (FORCE)"), logger: logger)
    }
}
