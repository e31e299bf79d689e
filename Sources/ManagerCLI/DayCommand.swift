import ArgumentParser
import CentralStore
import DayPlanner
import Foundation
import Logging
import RoadTravel
import TeamworkModel

/// `teamwork-manager day plan`: the best day for a team, as a preview or applied.
struct DayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "day",
        abstract: "Plan a team's day: who does what, in which order, and when they get there.",
        subcommands: [Plan.self]
    )

    struct Plan: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Assign and order a team's open work of one day among its members (a preview unless --apply).",
            discussion: """
                Takes the day's open tasks of the team (window or due date that day, on the team's clock) and its \
                active members. Each works their hours that day (`person hours`; --hours for whoever has none set), \
                less their absences (`person absence`), from their own place or the team's depot and back. Started \
                and pinned work stays with whoever has it; skills and windows are kept (work starts within the \
                window: arrive early and wait); urgent and high work is served first, then the least driving. Drives \
                are estimated from coordinates (the team's travel area). Every task left out says why.
                --apply makes the plan in one transaction as the acting manager (history: "planned"): each task to \
                its worker with its expected start, which reaches their device; work left out goes back to the team \
                unless started or pinned. --from now re-plans the rest of the day (after a sick call): nothing is \
                planned before then and workers set out from where they were last seen.
                """
        )
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Team slug or id.") var team: String
        @Option(help: "The day, like 2026-12-01 (default: today on the team's clock).") var on: String?
        @Option(help: "Working hours on the team's clock of whoever has no week set, like 07:00-16:00.") var hours = DayHours.usual
            .description
        @Option(help: "Re-plan from this time on: now, 13:00 (on the team's clock) or an ISO 8601 instant.") var from: String?
        @Option(help: "The planner's time budget in seconds.") var seconds = 1.0
        @Option(help: "Seed of the planner's search (the same seed and day give the same plan).") var seed: UInt64 = 1
        @Flag(help: "Make the plan: assign and order the work (else a preview that changes nothing).") var apply = false
        @Option(
            help:
                "An OSRM server whose table service gives the drives (default: $TEAMWORK_OSRM_URL; none: estimated from coordinates)."
        )
        var osrm: String?
        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard (0.05...60).contains(seconds) else { throw ValidationError("--seconds must be between 0.05 and 60") }
            do { _ = try DayHours(parsing: hours, field: "--hours") } catch { throw ValidationError("\(error)") }
            _ = try road()
        }

        /// The road network to ask, if one is set.
        func road() throws -> OSRMTable? {
            let address = osrm ?? ProcessInfo.processInfo.environment["TEAMWORK_OSRM_URL"].flatMap { $0.isEmpty ? nil : $0 }
            return try address.map { text in
                guard let url = URL(string: text) else { throw ValidationError("--osrm must be an http(s) URL") }
                do { return try OSRMTable(base: url) } catch { throw ValidationError("\(error)") }
            }
        }

        /// `now`, `13:00` on `day` in `zone`, or an ISO 8601 instant.
        static func instant(_ text: String, day: LocalDate, zone: Zone) throws -> Date {
            if text == "now" { return Date() }
            if let time = try? LocalTime(parsing: text) { return zone.instant(day, time) }
            return try ISODate.parse(text, field: "--from", in: zone)
        }

        func run() async throws {
            let (plan, zone, applied) = try await connection.withStore { store -> (DayPlan, Zone, [FieldTask]?) in
                let team = try await store.team(reference: team)
                let zone = Zone.reading(team.timeZone)
                let day = try on.map { try LocalDate(parsing: $0, field: "--on") } ?? zone.date(of: Date())
                let start = try from.map { try Self.instant($0, day: day, zone: zone) }
                let facts = try await store.dayFacts(teamID: team.id, day: day)
                let request = DayRequest(facts: facts, hours: try DayHours(parsing: hours, field: "--hours"), from: start)
                let travel = await TravelTimes.matrix(
                    DayPlan.places(request), estimate: request.travel, osrm: try road(), logger: Logger(label: "teamwork-manager"))
                let plan = DayPlan.plan(request, travel: travel, seed: seed, timeLimit: .milliseconds(Int(seconds * 1000)))
                guard apply else { return (plan, zone, nil) }
                return (plan, zone, try await store.applyDayPlan(teamID: team.id, day: day, plan.assignments))
            }
            if output.json { return try Output.json(plan) }
            Self.print(plan, team: team, zone: zone, applied: applied != nil)
        }

        static func print(_ plan: DayPlanner.DayPlan, team: String, zone: Zone, applied: Bool) {
            // A plan's times are whole minutes, read as the cards and the phones read them.
            func clock(_ date: Date) -> String { zone.time(of: date).short }
            let names = Dictionary(plan.routes.map { ($0.personID, $0.name) } + plan.away.map { ($0.personID, $0.name) }) { a, _ in a }
            Output.line(
                "Plan for \(team) on \(plan.day): \(plan.changeSummary)"
                    + (applied ? ", applied" : " (a preview: nothing is changed)"))
            for route in plan.routes {
                Output.line()
                Output.line(
                    route.visits.isEmpty
                        ? "\(route.name) (\(clock(route.starts))–\(clock(route.ends))): nothing planned"
                        : "\(route.name) (\(clock(route.starts))–\(clock(route.ends))): \(quantity(route.visits.count, "task")), \(Int(route.drivingMinutes)) min driving"
                )
                for (index, visit) in route.visits.enumerated() {
                    // Work starts at its window; an early arrival between two jobs is time to spare (before the
                    // first job, the worker simply leaves later).
                    let early = index > 0 && visit.starts.timeIntervalSince(visit.arrives) >= 60
                    let wait = early ? " (there at \(clock(visit.arrives)))" : ""
                    let words = visit.words(names: names, clock: clock)
                    let move = words == "stays" ? "" : "  [\(words)]"
                    let when = visit.started ? "under way  " : "\(clock(visit.starts))–\(clock(visit.ends))"
                    Output.line("  \(when)  #\(visit.taskID) \(visit.title)\(wait)\(move)")
                }
            }
            if !plan.away.isEmpty {
                Output.line()
                Output.line("Not working: " + plan.away.map { "\($0.name) (\($0.why))" }.joined(separator: ", "))
            }
            if !plan.leftOut.isEmpty {
                Output.line()
                Output.line("Left out:")
                for task in plan.leftOut {
                    let back = !task.keeps ? " [back to the team]" : ""
                    Output.line("  #\(task.taskID) \(task.title): \(task.reason)\(back)")
                }
            }
        }
    }
}
