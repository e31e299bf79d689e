import ArgumentParser
import CommandLineSupport
import Foundation
import TeamworkModel

/// `teamwork-manager`: the managers' command-line tool over the central store.
public struct TeamworkManager: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "teamwork-manager",
        abstract: "Manage Teamwork's people, teams, locations and master task list.",
        discussion: """
            The database comes from --database-url or TEAMWORK_DATABASE_URL (postgres://...). With neither, \
            a private local PostgreSQL is created and reused under TEAMWORK_HOME (default \
            ~/.local/share/teamwork, or /var/lib/teamwork for root). --database-url and --actor may also come \
            before the subcommand.

            Exit codes: 0 success, 64 usage, 65 invalid data, 66 unreadable file, 67 not found, \
            68 conflict, 69 database unavailable, 73 output file cannot be written, 78 configuration, 1 internal error.
            """,
        subcommands: [
            DatabaseCommand.self, PersonCommand.self, TeamCommand.self, LocationCommand.self,
            TaskCommand.self, PlanCommand.self, ChecklistCommand.self, AttachmentCommand.self, SuggestCommand.self, MapCommand.self,
            ReportCommand.self, ConflictsCommand.self, DayCommand.self, WebhookCommand.self, CustomerCommand.self, PartCommand.self,
        ]
    )

    public init() {}

    /// Parses the command line, runs the command, and turns any failure into one
    /// line on standard error and a documented exit code.
    public static func runMain() async -> Never {
        await CommandRunner.run(Self.self, toolName: "teamwork-manager", globalOptions: ["--database-url", "--actor"])
    }
}
