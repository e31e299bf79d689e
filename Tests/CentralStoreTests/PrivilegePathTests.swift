import Foundation
import PostgresNIO
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// Who someone is gets decided only inside SECURITY DEFINER functions (sql/0023): no role but
/// the owner writes the tables that say who is who, and what a session or a token proves is
/// derived from its secret, never from a row the caller wrote.
@Suite("Privilege paths")
struct PrivilegePathTests {
    static let securityTables = ["access_tokens", "board_sessions", "actor_roles", "attachments", "device_pairings"]

    @Test func noRoleButTheOwnerHoldsAWritePrivilegeOnTheSecurityTables() async throws {
        try await TestDatabase.withStore { store in
            // Every role that is not a superuser and does not own the table, PUBLIC included; PostgreSQL's own
            // predefined roles (pg_write_all_data) are for operators to grant, and none is granted here.
            let rows = try await store.rows(
                PostgresQuery(
                    unsafeSQL: """
                        SELECT t.name || ' ' || r.rolname || ' ' || p.privilege
                        FROM unnest(ARRAY['\(Self.securityTables.joined(separator: "','"))']) AS t(name)
                        CROSS JOIN (SELECT rolname FROM pg_roles WHERE NOT rolsuper AND rolname NOT LIKE 'pg\\_%'
                                    UNION ALL SELECT 'public') r
                        CROSS JOIN unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) AS p(privilege)
                        WHERE r.rolname <> (SELECT tableowner FROM pg_tables WHERE schemaname = 'public' AND tablename = t.name)
                          AND (has_table_privilege(r.rolname, t.name, p.privilege)
                               OR (p.privilege IN ('INSERT', 'UPDATE') AND has_any_column_privilege(r.rolname, t.name, p.privilege)))
                        ORDER BY 1
                        """))
            let granted = try rows.map { try $0.decode(String.self) }
            #expect(granted.isEmpty, "direct write privileges on security tables: \(granted)")
            // The roles the tools use exist, so the check above looked at them.
            let roles = try await store.rows("SELECT count(*)::int FROM pg_roles WHERE rolname IN ('teamwork_manager', 'teamwork_service')")
            #expect(try roles[0].decode(Int.self) == 2)
        }
    }

    /// A manager's own SQL login, bound to their person, tries what the review did: insert a board
    /// session for an admin, read others' CSRF tokens, end others' sessions, issue a token for an admin.
    @Test func aManagersSQLLoginCannotForgeReadOrEndBoardSessionsNorIssueAnAdminsToken() async throws {
        try await TestDatabase.withFresh { url in
            let role = "tw_mgr_" + UUID().uuidString.prefix(8).lowercased()
            let (world, admin, adminSecret) = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                let admin = try await store.addPerson(
                    try NewPerson(firstName: "Ada", lastName: "Admin", email: "ada@example.org", role: .admin))
                let (_, secret) = try await store.issueToken(personID: admin.id, label: "laptop")
                _ = try await store.rows(PostgresQuery(unsafeSQL: "CREATE ROLE \(role) LOGIN IN ROLE teamwork_manager"))
                _ = try await store.rows(PostgresQuery(unsafeSQL: "INSERT INTO actor_roles VALUES ('\(role)', \(world.manager.id))"))
                return (world, admin, secret)
            }
            defer {
                Task {
                    try? await CentralStore.withStore(url) { store in
                        _ = try await store.rows(PostgresQuery(unsafeSQL: "DELETE FROM actor_roles"))
                        _ = try await store.rows(PostgresQuery(unsafeSQL: "DROP ROLE IF EXISTS \(role)"))
                    }
                }
            }
            // The admin has a session of their own.
            guard
                case .signedIn(let adminSession, _) = try await CentralStore.withStore(
                    url,
                    { store in
                        try await store.openBoardSession(tokenSecret: adminSecret, lifetime: .seconds(3600))
                    })
            else {
                Issue.record("the admin could not sign in")
                return
            }

            var asManager = url
            asManager.username = role
            let forged = TokenSecret.randomBase64URL()
            for statement in [
                """
                INSERT INTO board_sessions (secret_hash, person_id, token_id, csrf, expires_at)
                VALUES (sha256(convert_to('\(forged)', 'UTF8')), \(admin.id), 1, '\(TokenSecret.randomBase64URL())', now() + interval '1 hour')
                """,
                "SELECT csrf FROM board_sessions",
                "DELETE FROM board_sessions",
                "INSERT INTO access_tokens (person_id, token_hash) VALUES (\(admin.id), sha256('x'))",
                "UPDATE access_tokens SET revoked_at = NULL",
                "INSERT INTO actor_roles VALUES ('\(role)', \(admin.id))",
            ] {
                await #expect(throws: (any Error).self, "refused: \(statement)") {
                    try await CentralStore.withStore(asManager) { _ = try await $0.rows(PostgresQuery(unsafeSQL: statement)) }
                }
            }
            await #expect(throws: TeamworkError.self, "a manager cannot issue a token for an admin") {
                try await CentralStore.withStore(asManager) { _ = try await $0.issueToken(personID: admin.id, label: "stolen") }
            }
            // What a manager may do through the functions still works: a token for a worker, and for themselves.
            try await CentralStore.withStore(asManager) { store in
                _ = try await store.issueToken(personID: world.ann.id, label: "phone")
                _ = try await store.issueToken(personID: world.manager.id, label: "laptop")
            }
            try await CentralStore.withStore(asManager) { (store: CentralStore) async throws in
                #expect(try await store.boardSession(secret: forged) == nil)
                #expect(try await store.boardSession(secret: adminSession)?.person.id == admin.id, "the secret's holder reads it")
            }
        }
    }

    /// A session row whose person is not its token's person (written by the owner, the only one who
    /// still can) opens nothing: a session proves only what its token proves.
    @Test func aSessionWhosePersonIsNotItsTokensPersonOpensNothing() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            let admin = try await store.addPerson(
                try NewPerson(firstName: "Ada", lastName: "Admin", email: "ada@example.org", role: .admin))
            let (token, _) = try await store.issueToken(personID: world.manager.id, label: "laptop")
            let secret = TokenSecret.randomBase64URL()
            _ = try await store.rows(
                """
                INSERT INTO board_sessions (secret_hash, person_id, token_id, csrf, expires_at)
                VALUES (sha256(convert_to(\(secret), 'UTF8')), \(admin.id), \(token.id), \(TokenSecret.randomBase64URL()),
                        now() + interval '1 hour')
                """)
            #expect(try await store.boardSession(secret: secret) == nil)
        }
    }

    /// A token issued while its person is being deactivated: the issue waits for the deactivation and
    /// is refused, or comes first and is revoked by it. Never a live token of someone who left.
    @Test func aTokenIssuedWhileItsPersonIsDeactivatedDoesNotSurviveIt() async throws {
        try await TestDatabase.withFresh { url in
            let world = try await CentralStore.withStore(url) { try await Fixtures.seed($0) }
            let logger = Logger(label: "test")
            let leaving = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 9, logger: logger)
            // The deactivation, as `person deactivate` makes it, held open before its commit.
            _ = try await leaving.query("BEGIN", logger: logger)
            _ = try await leaving.query("SELECT 1 FROM people WHERE id = \(world.bo.id) FOR UPDATE", logger: logger).collect()
            _ = try await leaving.query("UPDATE people SET deactivated_at = now() WHERE id = \(world.bo.id)", logger: logger)
            let finished = Locked(false)
            let issue = Task {
                defer { finished.mutate { $0 = true } }
                return try await CentralStore.withStore(url) { try await $0.issueToken(personID: world.bo.id, label: "phone") }
            }
            // The issue either finished (it did not wait) or waits on the person's lock.
            #expect(
                try await eventually(within: .seconds(10)) {
                    if finished.value { return true }
                    let waiting = try? await CentralStore.withStore(url) { store in
                        try await store.rows("SELECT count(*)::int FROM pg_stat_activity WHERE wait_event_type = 'Lock'")[0].decode(
                            Int.self)
                    }
                    return (waiting ?? 0) > 0
                })
            _ = try await leaving.query("COMMIT", logger: logger)
            try await leaving.close()
            let result = await issue.result
            let live = try await CentralStore.withStore(url) { store in
                try await store.rows("SELECT count(*)::int FROM access_tokens WHERE person_id = \(world.bo.id) AND revoked_at IS NULL")[0]
                    .decode(Int.self)
            }
            #expect(live == 0, "a live token of a deactivated person (issue: \(result))")
            // Reactivation revives nothing.
            try await CentralStore.withStore(url) { _ = try await $0.reactivatePerson(id: world.bo.id) }
            let revived = try await CentralStore.withStore(url) { store in
                try await store.rows("SELECT count(*)::int FROM access_tokens WHERE person_id = \(world.bo.id) AND revoked_at IS NULL")[0]
                    .decode(Int.self)
            }
            #expect(revived == 0)
        }
    }

    /// A person holds at most twenty board sessions however many sign-ins come at once: the oldest end.
    @Test func twentyFiveSignInsAtOnceLeaveAPersonTwentySessionsTheNewestOpen() async throws {
        try await TestDatabase.withFresh { url in
            let (secret, manager) = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                return (try await store.issueToken(personID: world.manager.id, label: "laptop").secret, world.manager.id)
            }
            let opened = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<25 {
                    group.addTask {
                        try await CentralStore.withStore(url) { store in
                            if case .signedIn(let session, _) = try await store.openBoardSession(
                                tokenSecret: secret, lifetime: .seconds(3600))
                            {
                                return session
                            }
                            return nil
                        }
                    }
                }
                return try await group.reduce(into: [String]()) { if let session = $1 { $0.append(session) } }
            }
            #expect(opened.count == 25)
            try await CentralStore.withStore(url) { (store: CentralStore) async throws in
                let held = try await store.rows("SELECT count(*)::int FROM board_sessions WHERE person_id = \(manager)")[0].decode(Int.self)
                #expect(held == 20)
                var open = 0
                for session in opened where try await store.boardSession(secret: session) != nil { open += 1 }
                #expect(open == 20)
            }
        }
    }

    /// Managers may write `people`, but only an admin makes someone a manager or an admin, or takes
    /// it away: a manager promoting themselves, or demoting an admin to a worker (to issue them a
    /// token, then promote them back), is refused; a bound admin may; an unbound login may not.
    @Test func onlyAnAdminGivesOrTakesTheManagerOrAdminRole() async throws {
        try await TestDatabase.withFresh { url in
            let suffix = UUID().uuidString.prefix(8).lowercased()
            let (manager, admin, unbound) = ("tw_m_\(suffix)", "tw_a_\(suffix)", "tw_u_\(suffix)")
            let (world, ada) = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                let ada = try await store.addPerson(
                    try NewPerson(firstName: "Ada", lastName: "Admin", email: "ada@example.org", role: .admin))
                for role in [manager, admin, unbound] {
                    _ = try await store.rows(PostgresQuery(unsafeSQL: "CREATE ROLE \(role) LOGIN IN ROLE teamwork_manager"))
                }
                _ = try await store.rows(
                    PostgresQuery(unsafeSQL: "INSERT INTO actor_roles VALUES ('\(manager)', \(world.manager.id)), ('\(admin)', \(ada.id))"))
                return (world, ada)
            }
            func run(as role: String, _ statement: String) async throws {
                var as_ = url
                as_.username = role
                try await CentralStore.withStore(as_) { _ = try await $0.rows(PostgresQuery(unsafeSQL: statement)) }
            }
            for (role, statement) in [
                (manager, "UPDATE people SET role = 'admin' WHERE id = \(world.manager.id)"),
                (manager, "UPDATE people SET role = 'worker' WHERE id = \(ada.id)"),
                (manager, "UPDATE people SET role = 'manager' WHERE id = \(world.ann.id)"),
                (manager, "INSERT INTO people (first_name, last_name, email, role) VALUES ('Eve', 'X', 'eve@example.org', 'admin')"),
                (unbound, "UPDATE people SET role = 'admin' WHERE id = \(world.ann.id)"),
            ] {
                await #expect(throws: (any Error).self, "refused: \(statement)") { try await run(as: role, statement) }
            }
            // What managers do with people still works, and a bound admin promotes.
            try await run(as: manager, "UPDATE people SET first_name = 'Annie' WHERE id = \(world.ann.id)")
            try await run(
                as: manager, "INSERT INTO people (first_name, last_name, email, role) VALUES ('Wes', 'X', 'wes@example.org', 'worker')")
            try await run(as: admin, "UPDATE people SET role = 'manager' WHERE id = \(world.ann.id)")
            let ann = try await CentralStore.withStore(url) { try await $0.person(id: world.ann.id) }
            #expect(ann.role == .manager && ann.firstName == "Annie")
            #expect(try await CentralStore.withStore(url) { try await $0.person(id: ada.id) }.role == .admin)
            #expect(try await CentralStore.withStore(url) { try await $0.person(id: world.manager.id) }.role == .manager)
            try await CentralStore.withStore(url) { store in
                _ = try await store.rows(PostgresQuery(unsafeSQL: "DELETE FROM actor_roles"))
                for role in [manager, admin, unbound] { _ = try await store.rows(PostgresQuery(unsafeSQL: "DROP ROLE \(role)")) }
            }
        }
    }
}
