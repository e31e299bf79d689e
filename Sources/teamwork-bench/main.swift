import ArgumentParser
import CommandLineSupport

/// `teamwork-bench`: measurements of Teamwork's moving parts. Prints figures.
struct TeamworkBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "teamwork-bench",
        abstract: "Measure Teamwork on this machine.",
        subcommands: [
            ReplicaBenchmark.self, SyncBenchmark.self, ListenerBenchmark.self, LoadBenchmark.self, UploadBenchmark.self,
            BoardBenchmark.self, AppBenchmark.self, VRPTWBenchmark.self, DayBenchmark.self, FailoverBenchmark.self,
        ]
    )
}

await CommandRunner.run(TeamworkBench.self, toolName: "teamwork-bench")
