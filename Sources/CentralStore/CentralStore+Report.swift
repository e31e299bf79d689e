import Foundation
import PostgresNIO
import TeamworkModel

extension CentralStore {
    /// Counts by status and team, overdue tasks (most overdue first, at most
    /// `overdueLimit`), and the completion rate, read in one snapshot.
    public func report(now: Date = Date(), overdueLimit: Int = 50) async throws -> Report {
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
            let lines = try await connection.query(
                """
                SELECT t.slug, k.status, count(*),
                       count(*) FILTER (WHERE k.due_at < \(now) AND k.status NOT IN ('completed', 'cancelled'))
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
                WHERE k.due_at < \(now) AND k.status NOT IN ('completed', 'cancelled')
                ORDER BY k.due_at, k.id LIMIT \(overdueLimit)
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
            return Report(
                generatedAt: now, countsByStatus: byStatus, teams: teams, overdueTasks: overdue, total: total,
                completionRate: countable > 0 ? Double(completed) / Double(countable) : nil,
                fieldChanges: fieldChanges, openConflicts: openConflicts
            )
        }
    }

    /// Creates `name` on the server if it does not exist. Needs a connection to
    /// another database of the same server (usually `postgres`) and CREATEDB.
    public func createDatabaseIfMissing(_ name: String) async throws -> Bool {
        let found = try await rows("SELECT 1 FROM pg_database WHERE datname = \(name)")
        guard found.isEmpty else { return false }
        let quoted = "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(quoted)"), logger: logger)
        return true
    }
}

extension CentralStore {
    /// Drops `name`, disconnecting anyone still using it. For tests and tooling.
    public func dropDatabase(_ name: String) async throws {
        let quoted = "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        try await connection.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(quoted) WITH (FORCE)"), logger: logger)
    }
}
