import ArgumentParser
import CentralStore
import DayPlanner
import Foundation
import TeamworkModel

/// `teamwork-manager day plan`: the best day for a team, as a preview.
struct DayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "day",
        abstract: "Plan a team's day: who does what, in which order, and when they get there.",
        subcommands: [Plan.self]
    )

    struct Plan: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Assign and order a team's open work of one day among its members (a preview: nothing changes).",
            discussion: """
                Takes the day's open tasks of the team (window or due date that day, on the team's clock) and its \
                members. Started work stays with whoever started it; skills and windows are kept; urgent and high \
                work is served first, then the least driving. Drives are estimated from coordinates (great-circle \
                distance × 1.3 at 30 km/h); a worker starts from their last check-in, else the middle of the day's \
                sites. Every task left out says why.
                """
        )
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Team slug or id.") var team: String
        @Option(help: "The day, like 2026-12-01 (default: today on the team's clock).") var on: String?
        @Option(help: "Working hours on the team's clock, like 07:00-16:00.") var hours = "07:00-16:00"
        @Option(help: "Minutes on site for each task.") var minutesOnSite = 45
        @Option(help: "The planner's time budget in seconds.") var seconds = 1.0
        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard (0.05...60).contains(seconds) else { throw ValidationError("--seconds must be between 0.05 and 60") }
            guard (1...600).contains(minutesOnSite) else { throw ValidationError("--minutes-on-site must be 1 to 600") }
            _ = try Self.hours(hours)
        }

        static func hours(_ text: String) throws -> (start: LocalTime, end: LocalTime) {
            let parts = text.split(separator: "-")
            guard parts.count == 2, let start = try? LocalTime(parsing: String(parts[0]), field: "hours"),
                let end = try? LocalTime(parsing: String(parts[1]), field: "hours"), start < end
            else { throw ValidationError("--hours must be a start and an end on one day, like 07:00-16:00") }
            return (start, end)
        }

        func run() async throws {
            let (request, zone) = try await connection.withStore { store -> (DayRequest, Zone) in
                let team = try await store.team(reference: team)
                let zone = try Zone(team.timeZone)
                let day = try on.map { try LocalDate(parsing: $0, field: "on") } ?? zone.date(of: Date())
                let tasks = try await store.listTasks(
                    TaskFilter(teamID: team.id, statuses: [.open, .assigned, .inProgress], on: day))
                let members = try await store.members(teamID: team.id).map(\.person).filter { $0.deactivatedAt == nil }
                let positions = try await store.workerPositions(personIDs: members.map(\.id))
                // Every site in one query, not one per task's site.
                let wanted = Set(tasks.compactMap(\.locationID))
                var sites: [Int64: (latitude: Double, longitude: Double, name: String)] = [:]
                for site in try await store.listLocations(kind: .site) where wanted.contains(site.id) {
                    sites[site.id] = (site.latitude, site.longitude, site.name)
                }
                let workers = members.map { person in
                    DayRequest.Worker(
                        person: person,
                        home: positions.first { $0.person.id == person.id }.map { (latitude: $0.latitude, longitude: $0.longitude) })
                }
                return (
                    DayRequest(
                        day: day, zone: zone, tasks: tasks, workers: workers, sites: sites, hours: try Self.hours(hours),
                        minutesOnSite: Double(minutesOnSite)), zone
                )
            }
            let plan = DayPlan.plan(request, timeLimit: .milliseconds(Int(seconds * 1000)))
            if output.json { return try Output.json(plan) }
            Output.line("Plan for \(team) on \(request.day) (a preview: nothing is changed)")
            for route in plan.routes {
                Output.line()
                Output.line(
                    route.visits.isEmpty
                        ? "\(route.name): nothing planned"
                        : "\(route.name): \(route.visits.count) task(s), \(Int(route.drivingMinutes)) min driving")
                // Minutes are what a worker reads; a wait shorter than one is none.
                func clock(_ date: Date) -> String {
                    let time = zone.time(of: date.addingTimeInterval(30))
                    return String(format: "%02d:%02d", time.hour, time.minute)
                }
                for (index, visit) in route.visits.enumerated() {
                    // Work starts at its window; an early arrival between two jobs is time to spare (before the
                    // first job, the worker simply leaves later).
                    let early = index > 0 && visit.starts.timeIntervalSince(visit.arrives) >= 60
                    let wait = early ? " (there at \(clock(visit.arrives)))" : ""
                    Output.line(
                        "  \(clock(visit.starts))–\(clock(visit.ends))  #\(visit.taskID) \(visit.title)\(wait)"
                            + (visit.moved ? "  [moves here]" : ""))
                }
            }
            if !plan.leftOut.isEmpty {
                Output.line()
                Output.line("Left out:")
                for task in plan.leftOut { Output.line("  #\(task.taskID) \(task.title): \(task.reason)") }
            }
        }
    }
}
