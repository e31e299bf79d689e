import CentralStore
import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

/// End to end: the built `teamwork-manager` binary against a real database.
@Suite("teamwork-manager workflow")
struct ManagerWorkflowTests {
    static func decode<T: Decodable>(_ type: T.Type, _ run: ManagerTool.Run) throws -> T {
        try JSONOutput.decode(type, run.stdout)
    }

    /// Seen failing before: a note with a C1 CSI, a bidi override and DEL came out of `--json` raw.
    @Test func printedJSONCarriesNoRawControlCharactersButTheSameText() async throws {
        try await TestDatabase.withFresh { url in
            let tool = ManagerTool(url)
            let hostile = "meter \u{9B}2J\u{202E}gnol\u{7F} done"
            #expect(try await tool("team", "add", "red", "--name", "Red Team").status == 0)
            #expect(try await tool("location", "add", "--lat", "59.3", "--lon", "18.0", "--name", "Depot").status == 0)
            let created = try Self.decode(
                FieldTask.self,
                try await tool(
                    "task", "create", "--title", "Meter", "--team", "red",
                    "--location", "1", "--description", hostile, "--json"))
            // The worker's position carries a name, and names may hold anything a manager typed.
            #expect(
                try await tool("person", "add", "--first", "Ann\u{202E}", "--last", "Lee\u{9B}", "--email", "ann@example.org").status == 0)
            #expect(try await tool("team", "add-member", "red", "ann@example.org").status == 0)
            for (run, escaped) in [
                (try await tool("task", "show", String(created.id), "--json"), "\\u009b2J\\u202egnol\\u007f"),
                (try await tool("task", "list", "--json"), "\\u009b2J\\u202egnol\\u007f"),
                (try await tool("map", "--geojson"), "Ann\\u202e Lee\\u009b"),
            ] {
                #expect(run.status == 0, "\(run.stderr)")
                #expect(
                    !run.stdout.unicodeScalars.contains { (0x7F...0x9F).contains($0.value) || (0x202A...0x202E).contains($0.value) },
                    "\(run.stdout.debugDescription)")
                #expect(run.stdout.contains(escaped), "\(run.stdout)")
            }
            #expect(created.description == hostile, "a script reading the JSON gets the text as it is")
        }
    }

    @Test func aManagerRunsThePeopleTeamsLocationsAndTasksWorkflow() async throws {
        try await TestDatabase.withFresh { url in
            let tool = ManagerTool(url)
            let ok: (ManagerTool.Run) -> Void = { run in
                #expect(run.status == 0, "\(run.stderr)")
            }
            ok(try await tool("person", "add", "--first", "Max", "--last", "Boss", "--email", "max@example.org", "--role", "manager"))
            ok(try await tool("person", "add", "--first", "Ann", "--last", "Lee", "--email", "ann@example.org"))
            ok(try await tool("person", "add", "--first", "Bo", "--last", "Li", "--email", "bo@example.org"))
            ok(try await tool("team", "add", "red", "--name", "Red Team", "--color", "#D03030", "--actor", "max@example.org"))
            ok(try await tool("team", "add-member", "red", "ann@example.org"))
            ok(try await tool("team", "add-member", "red", "bo@example.org"))
            let site = try Self.decode(
                Location.self,
                try await tool(
                    "location", "add", "--lat", "-33.87", "--lon", "151.21", "--name", "Depot", "--city", "Sydney", "--json"
                ))
            #expect(site.latitude == -33.87 && site.longitude == 151.21 && site.address.city == "Sydney")

            let created = try Self.decode(
                FieldTask.self,
                try await tool(
                    "task", "create", "--title", "Fix meter", "--team", "red", "--assignee", "ann@example.org",
                    "--location", String(site.id), "--due", "2026-12-01", "--priority", "high", "--actor", "max@example.org", "--json"
                ))
            #expect(created.status == .assigned && created.priority == .high)
            let floating = try Self.decode(FieldTask.self, try await tool("task", "create", "--title", "Sweep", "--team", "red", "--json"))
            #expect(floating.status == .open)

            let listed = try Self.decode([FieldTask].self, try await tool("task", "list", "--team", "red", "--json"))
            #expect(listed.map(\.id) == [created.id, floating.id])
            let table = try await tool("task", "list", "--assignee", "ann@example.org")
            #expect(table.stdout.contains("Fix meter") && !table.stdout.contains("Sweep"))
            #expect(table.stdout.contains("Ann Lee") && table.stdout.contains("red"))

            ok(try await tool("task", "update", String(created.id), "--title", "Fix the meter", "--expect-version", "1"))
            ok(try await tool("task", "assign", String(floating.id), "--team", "red", "--assignee", "bo@example.org"))
            // What a manager reads names people and teams (seen before: `assignee_id: 3 -> 2`, a token's person id only).
            let reassigned = try await tool("task", "history", String(floating.id))
            #expect(reassigned.stdout.contains("assigned to Bo Li"), "\(reassigned.stdout)")
            #expect(!reassigned.stdout.contains("assignee_id"), "\(reassigned.stdout)")
            ok(try await tool("person", "token", "issue", "ann@example.org"))
            let tokens = try await tool("person", "token", "list")
            #expect(tokens.stdout.contains("Ann Lee ("), "\(tokens.stdout)")
            #expect(try await tool("team", "list").stdout.contains("UNFINISHED"))
            let shown = try await tool("task", "show", String(created.id))
            #expect(shown.stdout.contains("Fix the meter") && shown.stdout.contains("Depot") && shown.stdout.contains("version:      2"))

            let history = try Self.decode([TaskHistoryEntry].self, try await tool("task", "history", String(created.id), "--json"))
            #expect(history.map(\.action) == ["created", "updated"])
            #expect(history[1].changes["title"] == FieldChange(old: "Fix meter", new: "Fix the meter"))

            ok(try await tool("task", "cancel", String(floating.id)))
            let report = try Self.decode(Report.self, try await tool("report", "--json"))
            #expect(report.countsByStatus == ["assigned": 1, "cancelled": 1])
            #expect(report.total == 2)
            ok(try await tool("task", "delete", String(floating.id)))
            ok(try await tool("team", "remove-member", "red", "bo@example.org"))
            ok(try await tool("person", "update", "bo@example.org", "--last", "Lin", "--role", "manager"))
            ok(try await tool("person", "remove", "bo@example.org"))
            let people = try Self.decode([Person].self, try await tool("person", "list", "--json"))
            #expect(people.map(\.email) == ["max@example.org", "ann@example.org"], "sorted by last name: Boss, Lee")
            let red = try await tool("team", "show", "red")
            #expect(red.stdout.contains("Ann Lee") && !red.stdout.contains("Bo Lin"))
        }
    }

    @Test func textWithQuotesSQLAndEmojiRoundTripsThroughTheCLI() async throws {
        try await TestDatabase.withFresh { url in
            let tool = ManagerTool(url)
            try await tool("team", "add", "red", "--name", "Red")
            let title = "O'Brien's \"meter\"; DROP TABLE tasks; -- 🚧👷‍♀️"
            let description = String(repeating: "Zoë 🚧 'x' \"y\"\n", count: 5_000)
            let created = try Self.decode(
                FieldTask.self,
                try await tool(
                    "task", "create", "--title", title, "--description", description, "--team", "red", "--json"
                ))
            let shown = try Self.decode(ShownTask.self, try await tool("task", "show", String(created.id), "--json"))
            #expect(shown.task.title == title)
            #expect(shown.task.description == description)
        }
    }

    @Test func everyReadCommandPrintsATableAndJSON() async throws {
        try await TestDatabase.withFresh { url in
            let tool = ManagerTool(url)
            try await tool("person", "add", "--first", "Ann", "--last", "Lee", "--email", "ann@example.org")
            try await tool("team", "add", "red", "--name", "Red", "--description", "North side")
            try await tool("team", "add-member", "red", "ann@example.org")
            try await tool("person", "update", "ann@example.org", "--default-team", "red")
            try await tool("team", "update", "red", "--name", "Crimson", "--color", "#AA0000")
            try await tool(
                "location", "add", "--lat", "10.5", "--lon", "-20.25", "--elevation", "-3", "--street", "1 Main St", "--city", "Town")
            let task = try Self.decode(
                FieldTask.self,
                try await tool(
                    "task", "create", "--title", "Overdue", "--team", "red", "--due", "2020-01-01", "--location", "1", "--json"
                ))

            let person = try await tool("person", "show", "ann@example.org")
            #expect(person.stdout.contains("default team: red") && person.stdout.contains("teams:        red"))
            struct PersonDetails: Decodable {
                var person: Person
                var teams: [Team]
            }
            let personJSON = try Self.decode(PersonDetails.self, try await tool("person", "show", "ann@example.org", "--json"))
            #expect(personJSON.teams.map(\.slug) == ["red"] && personJSON.person.defaultTeamID == personJSON.teams[0].id)

            #expect(try await tool("team", "list").stdout.contains("Crimson"))
            struct TeamDetails: Decodable {
                var team: Team
                var members: [TeamMember]
            }
            let team = try Self.decode(TeamDetails.self, try await tool("team", "show", "red", "--json"))
            #expect(team.team.color == "#aa0000" && team.members.map(\.person.email) == ["ann@example.org"])

            let location = try Self.decode(Location.self, try await tool("location", "show", "1", "--json"))
            #expect(location.elevation == -3 && location.address.street == "1 Main St" && location.kind == .site)
            #expect(try await tool("location", "list", "--kind", "site").stdout.contains("1 Main St, Town"))
            #expect(try Self.decode([Location].self, try await tool("location", "list", "--kind", "person", "--json")).isEmpty)

            let overdue = try await tool("task", "list", "--overdue")
            #expect(overdue.stdout.contains("2020-01-01 !"))
            let shown = try await tool("task", "show", String(task.id))
            #expect(shown.stdout.contains("(overdue)") && shown.stdout.contains("1 Main St, Town (10.5, -20.25)"))

            let report = try await tool("report")
            #expect(report.stdout.contains("Overdue (1):") && report.stdout.contains("red"), "\(report.stdout)")
            // A list cut at its limit says how many more there are.
            let cut = try await tool("report", "--limit", "0")
            #expect(cut.stdout.contains("Overdue (1):") && cut.stdout.contains("and 1 more (--limit 1 shows them all)"), "\(cut.stdout)")
            let status = try await tool("db", "status")
            #expect(status.stdout.contains("0001") && status.stdout.contains("core_schema"))
            #expect(status.stdout.contains("teamwork_apply_field_changes"))
            struct Status: Decodable {
                var migrations: [Migrator.Entry]
                var functions: [Migrator.FunctionEntry]
            }
            let entries = try Self.decode(Status.self, try await tool("db", "status", "--json"))
            #expect(entries.migrations.allSatisfy { $0.appliedAt != nil })
            #expect(!entries.functions.isEmpty && entries.functions.allSatisfy { !$0.pending })

            try await tool("task", "cancel", String(task.id))
            let reopened = try await tool("task", "reopen", String(task.id))
            #expect(reopened.stdout == "Reopened task \(task.id) (open)\n")
        }
    }

    @Test func aManagerIssuesListsAndRevokesAWorkersToken() async throws {
        try await TestDatabase.withFresh { url in
            let tool = ManagerTool(url)
            try await tool("person", "add", "--first", "Ann", "--last", "Lee", "--email", "ann@example.org")
            let issued = try await tool("person", "token", "issue", "ann@example.org", "--label", "phone")
            #expect(issued.status == 0)
            let secret = issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(TokenSecret.isWellFormed(secret))
            #expect(issued.stderr.contains("only time it is shown") && issued.stderr.contains("teamwork-worker login"))

            let listed = try await tool("person", "token", "list", "ann@example.org")
            #expect(listed.stdout.contains("phone") && !listed.stdout.contains(secret))
            let tokens = try Self.decode([AccessToken].self, try await tool("person", "token", "list", "--json"))
            #expect(tokens.count == 1 && tokens[0].revokedAt == nil)

            #expect(try await tool("person", "token", "revoke", String(tokens[0].id)).status == 0)
            let again = try await tool("person", "token", "revoke", String(tokens[0].id))
            #expect(again.status == 68 && again.errorLines.count == 1)
            #expect(try await tool("person", "token", "revoke", "999").status == 67)
            #expect(try Self.decode([AccessToken].self, try await tool("person", "token", "list", "--json"))[0].revokedAt != nil)
            let signedIn = try await CentralStore.withStore(url) { try await $0.authenticate(secret: secret) }
            #expect(signedIn == nil)
            // A manager's token is for the board, not a worker's device (issue 50).
            try await tool("person", "add", "--first", "Max", "--last", "Boss", "--email", "max@example.org", "--role", "manager")
            let managers = try await tool("person", "token", "issue", "max@example.org", "--label", "laptop")
            #expect(managers.stderr.contains("dispatcher's board") && !managers.stderr.contains("worker"), "\(managers.stderr)")
        }
    }

    struct ShownTask: Decodable {
        var task: FieldTask
    }

    @Test func aStaleVersionIsAConflictForTheSecondManager() async throws {
        try await TestDatabase.withFresh { url in
            let tool = ManagerTool(url)
            try await tool("team", "add", "red", "--name", "Red")
            let task = try Self.decode(FieldTask.self, try await tool("task", "create", "--title", "One", "--team", "red", "--json"))
            let first = try await tool("task", "update", String(task.id), "--priority", "urgent", "--expect-version", String(task.version))
            #expect(first.status == 0)
            let second = try await tool("task", "update", String(task.id), "--title", "Two", "--expect-version", String(task.version))
            #expect(second.status == 68)
            #expect(second.errorLines.count == 1)
            #expect(second.stderr.contains("changed by someone else"))
            let after = try Self.decode(ShownTask.self, try await tool("task", "show", String(task.id), "--json"))
            #expect(after.task.title == "One" && after.task.priority == .urgent)
        }
    }

    @Test func importingACSVFileIsAllOrNothing() async throws {
        try await TestDatabase.withFresh { url in
            let tool = ManagerTool(url)
            try await tool("team", "add", "red", "--name", "Red")
            let file = FileManager.default.temporaryDirectory.appending(path: "import-\(UUID().uuidString).csv")
            defer { try? FileManager.default.removeItem(at: file) }

            try "title,team,due\nOne,red,2026-12-01\nTwo,red,soon\n".write(to: file, atomically: true, encoding: .utf8)
            let bad = try await tool("task", "import", file.path)
            #expect(bad.status == 65)
            #expect(
                bad.errorLines == [
                    "teamwork-manager: error: line 3, column 'due': due must be an ISO 8601 date like 2026-12-01 or 2026-12-01T09:30:00Z"
                ])
            #expect(try Self.decode([FieldTask].self, try await tool("task", "list", "--json")).isEmpty)

            try "title,team,due\nOne,red,2026-12-01\nTwo,red,2026-12-02\n".write(to: file, atomically: true, encoding: .utf8)
            let good = try await tool("task", "import", file.path)
            #expect(good.status == 0 && good.stdout == "Imported 2 tasks\n")
            #expect(try Self.decode([FieldTask].self, try await tool("task", "list", "--json")).map(\.title) == ["One", "Two"])
        }
    }
}

/// Titles and notes come from other people and from the field: printing them must not drive the reader's terminal.
@Suite("Terminal-safe output")
struct TerminalSafeOutputTests {
    @Test func escapeSequencesInATitleNeverReachTheTerminalOfAManagerOrAWorker() async throws {
        try await TestDatabase.withFresh { url in
            let hostile = "Meter \u{1B}[2J\u{1B}]0;pwned\u{07}swap \u{202E}evil"
            let task = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                return try await store.createTask(try world.task(hostile, team: world.red, assignee: world.ann))
            }
            let tool = ManagerTool(url)
            for arguments in [["task", "list"], ["task", "show", String(task.id)]] {
                let run = try await tool.run(arguments)
                #expect(run.status == 0)
                #expect(run.stdout.contains("Meter") && run.stdout.contains("swap"))
                #expect(
                    !run.stdout.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x202E },
                    "\(arguments.joined(separator: " ")) prints no control characters")
            }
            let json = try await tool.run(["task", "show", String(task.id), "--json"])
            #expect(!json.stdout.unicodeScalars.contains { $0.value == 0x1B }, "JSON escapes them")
        }
    }
}
