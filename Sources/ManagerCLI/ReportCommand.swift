import ArgumentParser
import CentralStore
import Foundation
import TeamworkModel

struct ReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Counts by status and team, overdue tasks and the completion rate."
    )
    @OptionGroup var connection: ConnectionOptions
    @Option(help: "Show at most this many overdue tasks.") var overdueLimit: Int = 20
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if overdueLimit < 0 { throw ValidationError("--overdue-limit must not be negative") }
    }

    func run() async throws {
        let (report, names) = try await connection.withStore { store in
            (try await store.report(overdueLimit: overdueLimit), output.json ? TaskCommand.Names() : try await TaskCommand.Names.load(store))
        }
        if output.json { return try Output.json(report) }
        let statuses = TaskStatus.allCases.map(\.rawValue)
        Output.line("Tasks: \(report.total)   completion rate: "
            + (report.completionRate.map { String(format: "%.1f%%", $0 * 100) } ?? "-"))
        Output.line()
        Output.table(["TEAM"] + statuses.map { $0.uppercased() } + ["TOTAL", "OVERDUE"], report.teams.map { line in
            [line.teamSlug ?? "(personal)"] + statuses.map { String(line.counts[$0] ?? 0) } + [String(line.total), String(line.overdue)]
        } + [["all"] + statuses.map { String(report.countsByStatus[$0] ?? 0) } + [String(report.total), String(report.teams.map(\.overdue).reduce(0, +))]])
        Output.line()
        if report.overdueTasks.isEmpty {
            Output.line("No overdue tasks.")
        } else {
            Output.line("Overdue:")
            TaskCommand.printTable(report.overdueTasks, names: names, now: report.generatedAt)
        }
        Output.line()
        Output.line("Field changes taken in: \(report.fieldChanges)   open conflicts: \(report.openConflicts)"
            + (report.openConflicts > 0 ? " (see `teamwork-manager conflicts`)" : ""))
    }
}
