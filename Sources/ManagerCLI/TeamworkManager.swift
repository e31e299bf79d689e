import ArgumentParser
import Foundation
import TeamworkModel

/// `teamwork-manager`: the managers' command-line tool over the central store.
public struct TeamworkManager: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "teamwork-manager",
        abstract: "Manage Teamwork's people, teams, locations and master task list.",
        discussion: """
            The database comes from --database-url or TEAMWORK_DATABASE_URL (postgres://...). With neither,
            a private local PostgreSQL is created and reused under TEAMWORK_HOME (default
            ~/.local/share/teamwork, or /var/lib/teamwork for root).

            Exit codes: 0 success, 64 usage, 65 invalid data, 66 unreadable file, 67 not found,
            68 conflict, 69 database unavailable, 78 configuration, 1 internal error.
            """,
        subcommands: [
            DatabaseCommand.self, PersonCommand.self, TeamCommand.self, LocationCommand.self,
            TaskCommand.self, ReportCommand.self,
        ]
    )

    public init() {}

    /// Parses the command line, runs the command, and turns any failure into one
    /// line on standard error and a documented exit code.
    public static func runMain(_ arguments: [String]? = nil) async -> Never {
        // A closed pipe is reported as EPIPE to the writer instead of killing the process.
        signal(SIGPIPE, SIG_IGN)
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            Foundation.exit(0)
        } catch let error as TeamworkError {
            printError(error.message)
            Foundation.exit(ExitStatus.code(for: error.code))
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                // --help, --version: the parser's own full output.
                exit(withError: error)
            }
            if code == .validationFailure {
                printError(message(for: error) + " (see --help)")
                Foundation.exit(ExitStatus.usage)
            }
            printError("\(error)")
            Foundation.exit(1)
        }
    }

    static func printError(_ message: String) {
        let oneLine = message.split(whereSeparator: \.isNewline).joined(separator: " ")
        Output.write(Data("teamwork-manager: error: \(oneLine)\n".utf8), to: STDERR_FILENO)
    }
}

/// The documented exit codes.
enum ExitStatus {
    static let usage: Int32 = 64

    static func code(for code: TeamworkError.Code) -> Int32 {
        switch code {
        case .usage: 64
        case .invalidInput: 65
        case .unreadableFile: 66
        case .notFound: 67
        case .conflict: 68
        case .unavailable: 69
        case .configuration: 78
        case .internal: 1
        }
    }
}
