import ArgumentParser
import Foundation

/// `teamwork-bench`: measurements of Teamwork's moving parts. Prints figures.
struct TeamworkBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "teamwork-bench",
        abstract: "Measure Teamwork on this machine.",
        subcommands: [ReplicaBenchmark.self]
    )

    static func runMain() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}

await TeamworkBench.runMain()
