import Foundation
import PostgresNIO
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

@Suite("Database roles")
struct RolesTests {
    /// Runs `sql` as `role` inside a transaction that is always rolled back; `check` runs last, as the superuser.
    private func run(_ store: CentralStore, as role: String, _ sql: String..., check: String? = nil) async throws -> Int? {
        try await store.connection.query("BEGIN", logger: store.logger)
        do {
            try await store.connection.query(PostgresQuery(unsafeSQL: "SET LOCAL ROLE \(role)"), logger: store.logger)
            for statement in sql {
                try await store.connection.query(PostgresQuery(unsafeSQL: statement), logger: store.logger)
            }
            try await store.connection.query("RESET ROLE", logger: store.logger)
            var result: Int?
            if let check {
                result = try await store.connection.query(PostgresQuery(unsafeSQL: check), logger: store.logger)
                    .collect().first?.decode(Int.self)
            }
            try await store.connection.query("ROLLBACK", logger: store.logger)
            return result
        } catch {
            try await store.connection.query("ROLLBACK", logger: store.logger)
            throw error
        }
    }

    @Test func theServiceRoleChangesTasksOnlyThroughTheListenersFunction() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let task = try await store.createTask(try world.task(team: world.red, assignee: world.ann))
            await #expect(throws: (any Error).self) {
                try await run(
                    store, as: "teamwork_service",
                    """
                    UPDATE tasks SET status = 'completed', completed_at = now(), completed_by = \(world.ann.id),
                           completion_note = 'done' WHERE id = \(task.id)
                    """)
            }
            await #expect(throws: (any Error).self) {
                try await run(store, as: "teamwork_service", "UPDATE tasks SET title = 'hijacked' WHERE id = \(task.id)")
            }
            await #expect(throws: (any Error).self) {
                try await run(store, as: "teamwork_service", "DELETE FROM tasks WHERE id = \(task.id)")
            }
            await #expect(throws: (any Error).self) {
                try await run(store, as: "teamwork_service", "INSERT INTO teams (slug, name) VALUES ('x', 'x')")
            }
            _ = try await run(store, as: "teamwork_service", "SELECT * FROM change_feed")
        }
    }

    /// SECURITY DEFINER functions search pg_temp last: a session's temporary
    /// tables cannot stand in for the real history and feed.
    @Test func temporaryTablesNamedLikeTheHistoryAndTheFeedDoNotHideAManagersChange() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let task = try await store.createTask(try world.task(team: world.red, assignee: world.ann))
            let written = try await run(
                store, as: "teamwork_manager",
                "CREATE TEMP TABLE task_history (LIKE public.task_history INCLUDING ALL)",
                "CREATE TEMP TABLE change_feed (LIKE public.change_feed INCLUDING ALL)",
                "UPDATE tasks SET title = 'changed in the shadows' WHERE id = \(task.id)",
                check: """
                    SELECT ((SELECT count(*) FROM public.task_history WHERE task_id = \(task.id) AND action = 'updated')
                          + (SELECT count(*) FROM public.change_feed WHERE entity = 'task' AND entity_id = \(task.id)
                                AND position > (SELECT min(position) FROM public.change_feed WHERE entity = 'task' AND entity_id = \(task.id))))::int
                    """)
            #expect(written == 2, "one history entry and one feed position for the change, in the real tables")
        }
    }

    @Test func theManagerRoleChangesTasksButCannotForgeHistoryOrFeed() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            _ = try await run(store, as: "teamwork_manager", "INSERT INTO tasks (title, team_id) VALUES ('by a manager', \(world.red.id))")
            await #expect(throws: (any Error).self) {
                try await run(
                    store, as: "teamwork_manager", "INSERT INTO task_history (task_id, action, changes) VALUES (1, 'created', '{}')")
            }
            await #expect(throws: (any Error).self) {
                try await run(store, as: "teamwork_manager", "DELETE FROM change_feed")
            }
        }
    }

    /// A definer trigger function writes what no role may write itself (time on the job, the outbox,
    /// customer messages): no role may attach one to a table of its own and feed it made-up rows.
    @Test func noRoleMayRunADefinerTriggerFunctionOnATableOfItsOwn() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let task = try await store.createTask(try world.task(team: world.red, assignee: world.ann))
            for role in ["teamwork_manager", "teamwork_service"] {
                // The entries the function wrote for the made-up rows, counted before the transaction rolls back.
                let forged = try? await run(
                    store, as: role,
                    """
                    CREATE TEMP TABLE tasks (id bigint, status text, assignee_id bigint, planned_start timestamptz,
                        window_start timestamptz, due_at timestamptz, started_at timestamptz, completed_at timestamptz,
                        completed_by bigint, time_zone text)
                    """,
                    """
                    CREATE TRIGGER forge AFTER UPDATE ON pg_temp.tasks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
                        FOR EACH STATEMENT EXECUTE FUNCTION public.tasks_time_entries()
                    """,
                    "INSERT INTO pg_temp.tasks VALUES (\(task.id), 'in_progress', \(world.ann.id), NULL, NULL, NULL, now() - interval '9 hours', NULL, NULL, 'UTC')",
                    "UPDATE pg_temp.tasks SET status = 'completed', completed_by = \(world.ann.id), completed_at = now()",
                    check: "SELECT count(*)::int FROM public.time_entries")
                #expect(forged == nil, "\(role) attached tasks_time_entries to a table of its own: \(forged ?? 0) entries forged")
            }
            let open = try await store.rows(
                """
                SELECT p.proname FROM pg_proc p
                WHERE p.pronamespace = 'public'::regnamespace AND p.prosecdef AND p.prorettype = 'trigger'::regtype
                  AND (has_function_privilege('teamwork_manager', p.oid, 'EXECUTE')
                       OR has_function_privilege('teamwork_service', p.oid, 'EXECUTE'))
                ORDER BY 1
                """
            ).map { try $0.decode(String.self) }
            #expect(open.isEmpty, "definer trigger functions a role may attach: \(open)")
        }
    }

    /// A manager's own database role, bound to their person, acts as that person only.
    @Test func aManagersBoundRoleCannotClaimToActForSomeoneElse() async throws {
        try await TestDatabase.withFresh { url in
            let role = "tw_mgr_" + UUID().uuidString.prefix(8).lowercased()
            let (world, task) = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                let task = try await store.createTask(try world.task(team: world.red, assignee: world.ann))
                _ = try await store.rows(PostgresQuery(unsafeSQL: "CREATE ROLE \(role) LOGIN IN ROLE teamwork_manager"))
                _ = try await store.rows(PostgresQuery(unsafeSQL: "INSERT INTO actor_roles VALUES ('\(role)', \(world.manager.id))"))
                return (world, task)
            }
            var asManager = url
            asManager.username = role
            await #expect(throws: TeamworkError.self, "naming someone else is refused") {
                try await CentralStore.withStore(asManager, actorID: world.ann.id) { store in
                    _ = try await store.updateTask(id: task.id, try TaskChanges(title: "forged"))
                }
            }
            try await CentralStore.withStore(asManager) { store in
                _ = try await store.updateTask(id: task.id, try TaskChanges(title: "by the manager"))
            }
            let (history, title) = try await CentralStore.withStore(url) { store in
                (try await store.history(taskID: task.id), try await store.task(id: task.id).title)
            }
            #expect(title == "by the manager")
            #expect(history.last?.actorID == world.manager.id, "naming no one records the bound person")
            #expect(!history.contains { $0.actorID == world.ann.id })
            try await CentralStore.withStore(url) { store in
                _ = try await store.rows(PostgresQuery(unsafeSQL: "DELETE FROM actor_roles"))
                _ = try await store.rows(PostgresQuery(unsafeSQL: "DROP ROLE \(role)"))
            }
        }
    }
}
