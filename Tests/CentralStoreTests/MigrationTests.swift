import Foundation
import Testing
import TeamworkModel
import TeamworkTestSupport
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
                #expect(first.map(\.version) == Migration.embedded.map(\.version))
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
                    group.addTask { try await CentralStore.withStore(url) { try await Migrator().migrate($0).count } }
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

    @Test func everyShippedMigrationIsNumberedAndSplits() {
        let versions = Migration.embedded.map(\.version)
        #expect(versions == Array(1...versions.count))
        #expect(Migration.embedded.allSatisfy { !$0.statements.isEmpty })
    }
}
