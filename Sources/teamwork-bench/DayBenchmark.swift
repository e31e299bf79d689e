import ArgumentParser
import DayPlanner
import Foundation
import TeamworkModel

/// `teamwork-bench day`: a realistic day (by default 30 workers, 300 tasks with skills, windows,
/// shifts, two absences and some started work) planned as `day plan` plans it, per seed: how long
/// it takes in all, what was planned and left out, the driving, and the independent check's verdict.
struct DayBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "day",
        abstract: "Plan a realistic synthetic day (workers, tasks, skills, windows, shifts, absences) and print the figures."
    )

    @Option(help: "Workers on the crew.") var workers = 30
    @Option(help: "Tasks of the day.") var tasks = 300
    @Option(help: "Workers away (the first all day, the second from noon).") var absences = 2
    @Option(help: "The planner's time budget, in seconds (as day plan --seconds).") var seconds = 1.0
    @Option(help: "Days to plan, one per seed from 1.") var seeds = 3
    @Option(help: "What each minute an urgent task starts later costs, in minutes of driving (as day plan).")
    var urgentLateness = DayRequest.defaultUrgentLateness

    func validate() throws {
        guard (1...500).contains(workers), (1...5000).contains(tasks), (0...workers).contains(absences) else {
            throw ValidationError("--workers 1 to 500, --tasks 1 to 5000, --absences 0 to --workers")
        }
        guard seconds > 0, seconds <= 60, (1...20).contains(seeds) else { throw ValidationError("--seconds 0 to 60, --seeds 1 to 20") }
    }

    func run() async throws {
        print(
            "day: \(workers) workers, \(tasks) tasks, \(absences) absences; budget \(seconds) s; \(ProcessInfo.processInfo.activeProcessorCount) cores"
        )
        print("seed  total s  beyond budget s  planned  left out  urgent+high left out  driving min  urgent start  check")
        var totals: [Double] = []
        for seed in 1...UInt64(seeds) {
            let facts = DayFacts.synthetic(workers: workers, tasks: tasks, absences: absences, seed: seed)
            var request = DayRequest(facts: facts, hours: .usual)
            request.urgentLateness = urgentLateness
            let clock = ContinuousClock()
            let started = clock.now
            let plan = DayPlan.plan(request, seed: seed, timeLimit: .milliseconds(Int(seconds * 1000)))
            let took = clock.now - started
            let total = Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
            totals.append(total)
            let priorities = Dictionary(uniqueKeysWithValues: facts.tasks.map { ($0.id, $0.priority) })
            let important = plan.leftOut.filter { [.urgent, .high].contains(priorities[$0.taskID]) }.count
            let problems = plan.problems(for: request)
            // When urgent work starts, on average: minutes after 07:00 on the crew's clock.
            let seven = facts.zone.instant(facts.day, LocalTime(hour: 7, minute: 0)!)
            let urgentStarts = plan.routes.flatMap(\.visits).filter { priorities[$0.taskID] == .urgent }
                .map { $0.starts.timeIntervalSince(seven) / 60 }
            let urgentStart = urgentStarts.isEmpty ? 0 : urgentStarts.reduce(0, +) / Double(urgentStarts.count)
            if seed == 1 {
                let onSite = facts.tasks.reduce(0.0) { $0 + request.minutesOnSite($1) } / 60
                let hours = facts.members.compactMap { facts.workingDay($0, otherwise: request.hours).at?.duration }.reduce(0, +) / 3600
                print(String(format: "      (on-site work %.0f h; working hours available %.0f h, before any drive)", onSite, hours))
            }
            print(
                String(
                    format: "%4d  %7.2f  %15.2f  %7d  %8d  %20d  %11.0f  %8.0f min  %@", Int(seed), total, total - seconds,
                    plan.routes.flatMap(\.visits).count, plan.leftOut.count, important, plan.routes.map(\.drivingMinutes).reduce(0, +),
                    urgentStart, problems.isEmpty ? "feasible" : "\(quantity(problems.count, "problem")): \(problems[0])"))
        }
        print(String(format: "slowest %.2f s, mean %.2f s", totals.max() ?? 0, totals.reduce(0, +) / Double(totals.count)))
        stability()
    }

    /// How much a re-plan unsettles: the day planned and applied, then one change (the busiest worker
    /// off sick all day; one new urgent task) and planned again, with the costs for moving a task
    /// from who has it and from its time (as `day plan`) and without them (0): the share of the
    /// other tasks whose person, and whose time, changed. Ratios from the same run.
    func stability() {
        print("re-plan after one change: share of the other tasks that change person / time")
        print("seed  change                 with the costs           without (0)")
        for seed in 1...UInt64(seeds) {
            let facts = DayFacts.synthetic(workers: workers, tasks: tasks, absences: absences, seed: seed)
            let budget = Duration.milliseconds(Int(seconds * 1000))
            let first = DayPlan.plan(DayRequest(facts: facts, hours: .usual), seed: seed, timeLimit: budget)
            let day = first.applied(to: facts)
            // The busiest worker goes home sick; a new urgent task comes in.
            let busiest = first.routes.max { $0.visits.count < $1.visits.count }
            var sick = day
            if let busiest, let index = sick.members.firstIndex(where: { $0.person.id == busiest.personID }) {
                let span = sick.zone.day(sick.day)
                sick.members[index].absences.append(
                    Absence(id: 999_999, personID: busiest.personID, startsAt: span.start, endsAt: span.end, reason: .sick, note: ""))
            }
            var urgent = day
            if var call = day.tasks.first(where: { $0.status == .open || $0.status == .assigned }) {
                call.id = 999_999
                (call.priority, call.assigneeID, call.plannedStart, call.status, call.pinned) = (.urgent, nil, nil, .open, false)
                urgent.tasks.append(call)
            }
            for (name, changed, except) in [
                ("busiest worker sick", sick, Set(busiest?.visits.map(\.taskID) ?? [])), ("one new urgent task", urgent, [999_999]),
            ] as [(String, DayFacts, Set<Int64>)] {
                var shares: [(person: Double, time: Double)] = []
                for keep in [true, false] {
                    var request = DayRequest(facts: changed, hours: .usual)
                    if !keep { (request.moveMinutes, request.retimeMinutes) = (0, 0) }
                    shares.append(DayPlan.plan(request, seed: seed + 100, timeLimit: budget).changedShare(from: first, except: except))
                }
                print(
                    String(
                        format: "%4d  %-21@  %5.1f%% / %5.1f%%          %5.1f%% / %5.1f%%", Int(seed), name as NSString,
                        shares[0].person * 100, shares[0].time * 100, shares[1].person * 100, shares[1].time * 100))
            }
        }
    }
}
