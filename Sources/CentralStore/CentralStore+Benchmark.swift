import Foundation
import PostgresNIO
import TeamworkModel

/// Synthetic load for `teamwork-bench` and the tests that need a large master, behind `@_spi(Benchmark)`: not part of the store's API.
extension CentralStore {
    /// Seeds `teams` teams of `workersPerTeam` workers with `tasksPerTeam` tasks each (half of
    /// them assigned to a member, one site per ten tasks). Triggers are off while
    /// seeding (superuser only): the seed is the starting state, not a change.
    @_spi(Benchmark) public func benchmarkSeed(teams: Int, tasksPerTeam: Int, workersPerTeam: Int = 4) async throws {
        let w = workersPerTeam
        try await transaction { connection in
            try await connection.query("SET LOCAL session_replication_role = replica", logger: logger)
            try await connection.query(
                """
                INSERT INTO people (first_name, last_name, email, role)
                SELECT 'Worker', 'No. ' || g, 'worker' || g || '@bench.example', 'worker' FROM generate_series(1, \(teams * w)) g
                """, logger: logger)
            try await connection.query(
                "INSERT INTO teams (slug, name) SELECT 'team-' || g, 'Team ' || g FROM generate_series(1, \(teams)) g",
                logger: logger)
            try await connection.query(
                """
                INSERT INTO team_memberships (team_id, person_id)
                SELECT t, (t - 1) * \(w) + m FROM generate_series(1, \(teams)) t, generate_series(1, \(w)) m
                """, logger: logger)
            try await connection.query(
                """
                INSERT INTO locations (kind, name, latitude, longitude, street, city)
                SELECT 'site', 'Site ' || g, (g % 170) - 85 + 0.5, (g % 350) - 175 + 0.25, g || ' Main Street', 'Benchtown'
                FROM generate_series(1, \(max(1, teams * tasksPerTeam / 10))) g
                """, logger: logger)
            try await connection.query(
                """
                INSERT INTO tasks (title, description, priority, status, team_id, assignee_id, location_id, due_at)
                SELECT 'Task ' || g, 'Synthetic task number ' || g || ' for the benchmark',
                       (ARRAY['low','normal','high','urgent'])[1 + g % 4],
                       CASE WHEN g % 2 = 0 THEN 'assigned' ELSE 'open' END,
                       1 + (g - 1) / \(tasksPerTeam),
                       CASE WHEN g % 2 = 0 THEN ((g - 1) / \(tasksPerTeam)) * \(w) + 1 + g % \(w) END,
                       1 + (g - 1) / 10,
                       now() + ((g % 60) || ' days')::interval
                FROM generate_series(1, \(teams * tasksPerTeam)) g
                """, logger: logger)
        }
        try await connection.query("ANALYZE", logger: logger)
    }

    /// Renames one task and returns the feed position of the change.
    @_spi(Benchmark) public func benchmarkRename(taskID: Int64, title: String) async throws -> Int64 {
        try await transaction { connection in
            try await connection.query("UPDATE tasks SET title = \(title) WHERE id = \(taskID)", logger: logger)
            let rows = try await connection.query("SELECT max(position) FROM change_feed", logger: logger).collect()
            return try rows[0].decode(Int64.self)
        }
    }

    /// Changes the priority of the first `count` tasks in one transaction: `count` feed positions.
    @_spi(Benchmark) public func benchmarkTouch(firstTasks count: Int) async throws -> Int {
        try await transaction { connection in
            let rows = try await connection.query(
                """
                UPDATE tasks SET priority = CASE priority WHEN 'urgent' THEN 'low' ELSE 'urgent' END
                WHERE id <= \(count) RETURNING id
                """, logger: logger
            ).collect()
            return rows.count
        }
    }

    /// A token for every worker: (person, their first team, the secret).
    @_spi(Benchmark) public func benchmarkTokens() async throws -> [(personID: Int64, teamID: Int64, secret: String)] {
        let people = try await rows(
            "SELECT p.id, min(m.team_id) FROM people p JOIN team_memberships m ON m.person_id = p.id GROUP BY p.id ORDER BY p.id"
        ).map { try $0.decode((Int64, Int64).self) }
        let secrets = people.map { _ in TokenSecret.generate() }
        try await transaction { connection in
            try await connection.query(
                """
                INSERT INTO access_tokens (person_id, token_hash, label)
                SELECT p, sha256(convert_to(s, 'UTF8')), 'bench' FROM unnest(\(people.map(\.0)), \(secrets)) AS x (p, s)
                """, logger: logger)
        }
        return zip(people, secrets).map { ($0.0, $0.1, $1) }
    }

    /// Changes one task of every team in one transaction (a fan-out to every team's devices).
    /// How many changes whose id matches `pattern` (SQL LIKE) the ledger holds.
    @_spi(Benchmark) public func benchmarkCount(changesLike pattern: String) async throws -> Int {
        try await rows("SELECT count(*)::int FROM field_changes WHERE change_id LIKE \(pattern)")[0].decode(Int.self)
    }

    @_spi(Benchmark) public func benchmarkTouchOneTaskPerTeam() async throws -> Int {
        try await transaction { connection in
            try await connection.query(
                """
                UPDATE tasks SET priority = CASE priority WHEN 'urgent' THEN 'low' ELSE 'urgent' END
                WHERE id IN (SELECT min(id) FROM tasks WHERE team_id IS NOT NULL GROUP BY team_id) RETURNING id
                """, logger: logger
            ).collect().count
        }
    }
}
