import CentralStore
import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

/// Bad input through the built binary: one line on stderr, a documented exit
/// code, nothing on stdout, nothing written.
@Suite("teamwork-manager errors")
struct ManagerErrorTests {
    static let cases: [(arguments: [String], status: Int32, message: String)] = [
        (["task", "show", "999"], 67, "no task with id 999"),
        (["person", "show", "nobody@example.org"], 67, "no person with that email"),
        (["team", "show", "nope"], 67, "no team with slug 'nope'"),
        (["task", "create", "--title", "X", "--team", "red", "--due", "next week"], 65, "due must be an ISO 8601 date"),
        (["task", "create", "--title", "  ", "--team", "red"], 65, "title must not be empty"),
        (["task", "create", "--title", "X"], 64, "give --team, --assignee, or both"),
        (["task", "create", "--title", "X", "--team", "red", "--assignee", "cy@example.org"], 65, "not a member of that team"),
        (["task", "create", "--title", "X", "--team", "red", "--priority", "asap"], 65, "priority must be one of"),
        (["location", "add", "--lat", "91", "--lon", "0"], 65, "latitude must be between -90 and 90"),
        (["location", "add", "--lat", "0", "--lon", "-180.5"], 65, "longitude must be between -180 and 180"),
        (["location", "add", "--lat", "north", "--lon", "0"], 65, "latitude must be a number"),
        (["person", "add", "--first", "", "--last", "X", "--email", "x@example.org"], 65, "first name must not be empty"),
        (["person", "add", "--first", "A", "--last", "X", "--email", "not-an-email"], 65, "email is not a valid address"),
        (["person", "add", "--first", "A", "--last", "X", "--email", "ANN@example.org"], 68, "a person with this email already exists"),
        (["team", "add", "red", "--name", "Again"], 68, "a team with this slug already exists"),
        (["team", "add", "Bad Slug", "--name", "X"], 65, "slug must be"),
        (["team", "remove", "red"], 68, "still has 1 task;"),
        (["task", "import", "/nonexistent/tasks.csv"], 66, "no file /nonexistent/tasks.csv"),
        (
            ["map", "--html", "/nonexistent-folder/map.html"], 73,
            "cannot write /nonexistent-folder/map.html: no folder /nonexistent-folder"
        ),
        (["task", "show"], 64, "Missing expected argument"),
        (["task", "show", "abc"], 64, "abc"),
        (["task", "frobnicate"], 64, "frobnicate"),
        (["person", "update", "ann@example.org"], 64, "nothing to change"),
        (["task", "list", "--actor", "ann@example.org"], 64, "must be a manager or an admin"),
        (["task", "list", "--limit", "0"], 64, "--limit must be at least 1"),
        (["task", "list", "--status", "done"], 65, "status must be one of"),
        (["task", "update", "1", "--location", "5", "--clear-location"], 64, "not both"),
        (["task", "update", "1", "--location", "999"], 67, "no such location"),
        (["task", "reopen", "1"], 68, "not completed or cancelled"),
        (["task", "assign", "999", "--team", "red"], 67, "no task with id 999"),
        (["task", "assign", "1", "--team", "blue", "--assignee", "ann@example.org"], 65, "not a member of that team"),
        (["team", "update", "red"], 64, "nothing to change"),
        (["team", "update", "red", "--color", "red"], 65, "colour must be #rrggbb"),
        (["team", "remove-member", "red", "cy@example.org"], 67, "is not a member of team"),
        (["team", "add-member", "red", "ann@example.org"], 68, "already a member"),
        (["person", "update", "ann@example.org", "--default-team", "blue"], 65, "must be one of the person's teams"),
        (["person", "update", "ann@example.org", "--avatar", "ftp://x"], 65, "avatar must be an http or https URL"),
        (["location", "show", "99"], 67, "no location with id 99"),
        (["location", "list", "--kind", "moon"], 65, "kind must be one of"),
        (["report", "--overdue-limit=-1"], 64, "must not be negative"),
    ]

    @Test(arguments: cases)
    func badInputGetsOneLineADocumentedCodeAndChangesNothing(_ arguments: [String], _ status: Int32, _ message: String) async throws {
        try await TestDatabase.withFresh { url in
            let tool = ManagerTool(url)
            try await tool("team", "add", "red", "--name", "Red")
            try await tool("team", "add", "blue", "--name", "Blue")
            try await tool("person", "add", "--first", "Ann", "--last", "Lee", "--email", "ann@example.org")
            try await tool("person", "add", "--first", "Cy", "--last", "Wu", "--email", "cy@example.org")
            try await tool("team", "add-member", "red", "ann@example.org")
            try await tool("task", "create", "--title", "Existing", "--team", "red")
            let before = try await CentralStoreSnapshot.take(url)

            let run = try await tool.run(arguments)
            #expect(run.status == status, "\(run.stderr)")
            #expect(run.errorLines.count == 1, "\(run.stderr)")
            #expect(run.stderr.hasPrefix("teamwork-manager: error: "))
            #expect(run.stderr.contains(message), "\(run.stderr)")
            #expect(run.stdout.isEmpty)
            #expect(try await CentralStoreSnapshot.take(url) == before)
        }
    }

    @Test func aMalformedDatabaseURLIsAConfigurationError() async throws {
        let run = try await ManagerTool(databaseURL: "mysql://nope")("task", "list")
        #expect(run.status == 78)
        #expect(run.errorLines == ["teamwork-manager: error: database URL must look like postgres://user:password@host:5432/database"])
    }

    @Test func anUnreachableDatabaseIsReportedWithoutThePassword() async throws {
        let run = try await ManagerTool(databaseURL: "postgres://max:s3cret@/teamwork?host=/nonexistent-socket-dir")("task", "list")
        #expect(run.status == 69)
        #expect(run.errorLines.count == 1)
        #expect(run.stderr.contains("cannot reach the database"))
        #expect(!run.stderr.contains("s3cret"))
    }

    /// One line a person can act on, not the driver's internals (seen before:
    /// `SingleConnectionFailure(target: [IPv4]127.0.0.1/…` with unbalanced parentheses).
    @Test(arguments: [
        ("postgres://max@127.0.0.1:\(ServiceProcess.freePort())/teamwork", "connection refused: is PostgreSQL running"),
        ("postgres://max@no-such-host.invalid:5432/teamwork", "no such host name"),
        ("postgres://max@/teamwork?host=/nonexistent-socket-dir", "no PostgreSQL socket there"),
    ])
    func anUnreachableDatabaseIsOneLineSayingWhatToCheck(url: String, meaning: String) async throws {
        let run = try await ManagerTool(databaseURL: url)("task", "list")
        #expect(run.status == 69)
        #expect(run.errorLines.count == 1 && run.stderr.contains(meaning), "\(run.stderr)")
        for inner in ["SingleConnectionFailure", "IPv4", "errno", "SocketAddressError"] {
            #expect(!run.stderr.contains(inner), "\(run.stderr)")
        }
    }

    @Test func aDatabaseWithoutTheSchemaSaysToMigrate() async throws {
        try await TestDatabase.withFresh(migrated: false) { url in
            let tool = ManagerTool(url)
            let run = try await tool("task", "list")
            #expect(run.status == 78)
            #expect(run.stderr.contains("teamwork-manager db migrate"))
            let migrate = try await tool("db", "migrate")
            #expect(migrate.status == 0)
            #expect(migrate.stdout.contains("applied 0001_core_schema"))
            #expect(try await tool("db", "migrate").stdout == "The database schema is up to date.\n")
            #expect(try await tool("db", "status").status == 0)
            #expect(try await tool("task", "list").status == 0)
        }
    }

    @Test func dbMigrateAndStatusWorkWhateverTeamworkActorSays() async throws {
        try await TestDatabase.withFresh(migrated: false) { url in
            let tool = ManagerTool(databaseURL: url.connectionString, environment: ["TEAMWORK_ACTOR": "max@example.org"])
            let status = try await tool("db", "status")
            #expect(status.status == 78 && status.stderr.contains("pending"), "\(status.stderr)")
            let migrate = try await tool("db", "migrate")
            #expect(migrate.status == 0, "\(migrate.stderr)")
            #expect(migrate.stdout.contains("applied 0001_core_schema"))
            #expect(try await tool("db", "migrate").status == 0)
            #expect(try await tool("db", "status").status == 0)
            let list = try await tool("task", "list")
            #expect(list.status == 67, "the actor is still checked where it acts: \(list.stderr)")
        }
    }

    @Test func helpExitsZeroAndListsTheCommands() async throws {
        let run = try await ManagerTool(databaseURL: nil)("--help")
        #expect(run.status == 0)
        for command in ["db", "person", "team", "location", "task", "report"] {
            #expect(run.stdout.contains(command))
        }
    }
}

/// Every write to the central store adds to the change feed, so an unchanged
/// feed (and task list) proves a failed command wrote nothing.
enum CentralStoreSnapshot {
    struct State: Equatable {
        var feed: [FeedEntry]
        var tasks: [FieldTask]
    }

    static func take(_ url: DatabaseURL) async throws -> State {
        try await CentralStore.withStore(url) { store in
            State(feed: try await store.feed(limit: 100_000), tasks: try await store.listTasks())
        }
    }
}
