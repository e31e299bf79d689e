import Foundation
import PostgresNIO
import Testing
import TeamworkModel
import TeamworkTestSupport
@testable import CentralStore

@Suite("Database roles")
struct RolesTests {
    /// Runs `sql` as `role` inside a transaction that is always rolled back.
    private func run(_ store: CentralStore, as role: String, _ sql: String) async throws {
        try await store.connection.query("BEGIN", logger: store.logger)
        do {
            try await store.connection.query(PostgresQuery(unsafeSQL: "SET LOCAL ROLE \(role)"), logger: store.logger)
            try await store.connection.query(PostgresQuery(unsafeSQL: sql), logger: store.logger)
            try await store.connection.query("ROLLBACK", logger: store.logger)
        } catch {
            try await store.connection.query("ROLLBACK", logger: store.logger)
            throw error
        }
    }

    @Test func theServiceRoleWritesOnlyFieldWorkColumns() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let task = try await store.createTask(try world.task(team: world.red, assignee: world.ann))
            try await run(store, as: "teamwork_service", """
                UPDATE tasks SET status = 'completed', completed_at = now(), completed_by = \(world.ann.id),
                       completion_note = 'done' WHERE id = \(task.id)
                """)
            await #expect(throws: (any Error).self) {
                try await run(store, as: "teamwork_service", "UPDATE tasks SET title = 'hijacked' WHERE id = \(task.id)")
            }
            await #expect(throws: (any Error).self) {
                try await run(store, as: "teamwork_service", "DELETE FROM tasks WHERE id = \(task.id)")
            }
            await #expect(throws: (any Error).self) {
                try await run(store, as: "teamwork_service", "INSERT INTO teams (slug, name) VALUES ('x', 'x')")
            }
            try await run(store, as: "teamwork_service", "SELECT * FROM change_feed")
        }
    }

    @Test func theManagerRoleChangesTasksButCannotForgeHistoryOrFeed() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            try await run(store, as: "teamwork_manager", "INSERT INTO tasks (title, team_id) VALUES ('by a manager', \(world.red.id))")
            await #expect(throws: (any Error).self) {
                try await run(store, as: "teamwork_manager", "INSERT INTO task_history (task_id, action, changes) VALUES (1, 'created', '{}')")
            }
            await #expect(throws: (any Error).self) {
                try await run(store, as: "teamwork_manager", "DELETE FROM change_feed")
            }
        }
    }
}
