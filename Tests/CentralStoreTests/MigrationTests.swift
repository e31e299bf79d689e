import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

@Suite("Migrations")
struct MigrationTests {
    @Test func migrationsApplyToAnEmptyDatabaseThenRerunAsNoOps() async throws {
        try await TestDatabase.withFresh(migrated: false) { url in
            try await CentralStore.withStore(url) { store in
                let before = try await Migrator().status(store)
                #expect(before.allSatisfy { $0.appliedAt == nil })
                await #expect(throws: TeamworkError.self) { try await Migrator().requireCurrent(store) }

                let first = try await Migrator().migrate(store)
                #expect(first.migrations.map(\.version) == Migration.embedded.map(\.version))
                #expect(first.functions.map(\.name) == StoredFunction.embedded.map(\.name))
                let second = try await Migrator().migrate(store)
                #expect(second.isEmpty)

                let after = try await Migrator().status(store)
                #expect(after.count == Migration.embedded.count)
                #expect(after.allSatisfy { $0.appliedAt != nil && !$0.modified && !$0.unknown })
                try await Migrator().requireCurrent(store)
            }
        }
    }

    @Test func concurrentMigratorsApplyEachMigrationOnce() async throws {
        try await TestDatabase.withFresh(migrated: false) { url in
            let applied = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<3 {
                    group.addTask { try await CentralStore.withStore(url) { try await Migrator().migrate($0).migrations.count } }
                }
                return try await group.reduce(0, +)
            }
            #expect(applied == Migration.embedded.count)
        }
    }

    @Test func statusFlagsAShippedMigrationWhoseTextChanged() async throws {
        try await TestDatabase.withStore { store in
            var edited = Migration.embedded
            edited[0].sql += "\n-- edited after shipping\n"
            let status = try await Migrator(migrations: edited).status(store)
            #expect(status.first?.modified == true)
            #expect(status.dropFirst().allSatisfy { !$0.modified })
        }
    }

    @Test func statusFlagsMigrationsTheToolDoesNotKnow() async throws {
        try await TestDatabase.withStore { store in
            let status = try await Migrator(migrations: Array(Migration.embedded.dropLast())).status(store)
            #expect(status.last?.unknown == true)
        }
    }

    @Test func scriptsSplitOnlyAtTopLevelSemicolons() {
        let script = """
            -- a comment; with a semicolon
            CREATE TABLE a (x text DEFAULT 'semi;colon', "we;ird" int);
            /* block; comment */
            CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$;
            CREATE FUNCTION g() RETURNS text LANGUAGE sql AS $body$ SELECT 'x;y' $body$;
            SELECT 'it''s; fine';
            """
        let statements = SQLScript.statements(in: script)
        #expect(statements.count == 4)
        #expect(statements[1].contains("RETURN 1; END $$"))
        #expect(statements[2].hasSuffix("$body$ SELECT 'x;y' $body$"))
        #expect(statements[3] == "SELECT 'it''s; fine'")
    }

    @Test func aChangedStoredFunctionIsReplacedOnceByTheNextMigrateAndRequiredUntilThen() async throws {
        try await TestDatabase.withStore { store in
            var functions = StoredFunction.embedded
            let index = try #require(functions.firstIndex { $0.name == "touch_updated_at" })
            functions[index].sql = functions[index].sql.replacingOccurrences(
                of: "NEW.updated_at := now();", with: "NEW.updated_at := now() - interval '1 day';")
            let fixed = Migrator(functions: functions)

            #expect(try await fixed.functionStatus(store).filter(\.pending).map(\.name) == ["touch_updated_at"])
            await #expect(throws: TeamworkError.self) { try await fixed.requireCurrent(store) }

            let applied = try await fixed.migrate(store)
            #expect(applied.migrations.isEmpty)
            #expect(applied.functions.map(\.name) == ["touch_updated_at"])
            #expect(try await fixed.migrate(store).isEmpty)
            try await fixed.requireCurrent(store)

            // The database runs the new text: a team's updated_at is now a day behind.
            let rows = try await store.rows(
                "INSERT INTO teams (slug, name) VALUES ('t', 'T') RETURNING id")
            let id = try rows[0].decode(Int64.self)
            let lag = try await store.rows(
                "UPDATE teams SET name = 'U' WHERE id = \(id) RETURNING extract(epoch FROM now() - updated_at)::float8")
            #expect(try lag[0].decode(Double.self) > 3600)
            // And the shipped tool sees its own text missing.
            #expect(try await Migrator().functionStatus(store).filter(\.pending).map(\.name) == ["touch_updated_at"])
        }
    }

    @Test func aNewerDatabaseKeepsItsFunctions() async throws {
        try await TestDatabase.withStore { store in
            var functions = StoredFunction.embedded
            functions[0].sql += "\n-- older text\n"
            let older = Migrator(migrations: Array(Migration.embedded.dropLast()), functions: functions)
            #expect(try await older.migrate(store).isEmpty)
            try await older.requireCurrent(store)
            #expect(try await Migrator().functionStatus(store).allSatisfy { !$0.pending })
        }
    }

    @Test func everyStoredFunctionHasItsOwnFileAndNoMigrationIsNeededToApplyIt() {
        let names = StoredFunction.embedded.map(\.name)
        #expect(names.count == Set(names).count)
        #expect(names.contains("teamwork_apply_field_changes_in_replica"))
        for function in StoredFunction.embedded {
            #expect(function.sql.contains("CREATE OR REPLACE FUNCTION \(function.name)("), "\(function.name)")
        }
    }

    @Test func everyShippedMigrationIsNumberedAndSplits() {
        let versions = Migration.embedded.map(\.version)
        #expect(versions == Array(1...versions.count))
        #expect(Migration.embedded.allSatisfy { !$0.statements.isEmpty })
    }
}
