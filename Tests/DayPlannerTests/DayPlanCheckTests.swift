import DayPlanner
import Foundation
import TeamworkModel
import Testing

/// Every day plan passes a check made from the master's facts, apart from the solver: each task
/// once, hours less absences, windows, due times, minutes on site, skills, started work kept.
@Suite("Day plans, checked")
struct DayPlanCheckTests {
    @Test(arguments: [1, 2, 3] as [UInt64])
    func everyPlanOfASyntheticDayKeepsHoursAbsencesWindowsAndSkills(seed: UInt64) {
        let facts = DayFacts.synthetic(workers: 8, tasks: 60, absences: 2, seed: seed)
        let request = DayRequest(facts: facts, hours: try! DayHours(parsing: "07:00-16:00"))
        let plan = DayPlan.plan(request, seed: seed, timeLimit: .milliseconds(200))
        #expect(plan.problems(for: request) == [])
        let (sick, halfDay) = (facts.members[0].person.id, facts.members[1].person.id)
        #expect(!plan.routes.contains { $0.personID == sick }, "away all day: no route")
        #expect(plan.away.contains { $0.personID == sick && $0.why == "away (sick)" })
        let noon = facts.zone.instant(facts.day, LocalTime(hour: 12, minute: 0)!)
        #expect(plan.routes.first { $0.personID == halfDay }.map { $0.visits.allSatisfy { $0.ends <= noon } } ?? true)
        #expect(plan.routes.flatMap(\.visits).count > 30, "most of the day is planned")
        for task in facts.tasks where task.status == .inProgress {
            #expect(plan.routes.first { $0.visits.contains { $0.taskID == task.id } }?.personID == task.assigneeID)
        }
    }

    /// Seen on main: the preview said 11:40 where the card said ETA 11:39 (the preview rounded, the
    /// card cut the seconds). Every visit starts and ends on a whole minute, also in a re-plan asked
    /// at an odd second, so every reader of the time reads the same one.
    @Test func everyVisitStartsOnAWholeMinuteAlsoInAReplanAskedAtAnOddSecond() throws {
        let facts = DayFacts.synthetic(workers: 6, tasks: 40, absences: 1, seed: 4)
        let from = facts.zone.instant(facts.day, LocalTime(hour: 10, minute: 3, second: 27)!)
        for request in [
            DayRequest(facts: facts, hours: .usual), DayRequest(facts: facts, hours: .usual, from: from),
        ] {
            let plan = DayPlan.plan(request, seed: 4, timeLimit: .milliseconds(200))
            let visits = plan.routes.flatMap(\.visits)
            #expect(visits.count > 10)
            #expect(visits.allSatisfy { $0.starts.timeIntervalSince1970.truncatingRemainder(dividingBy: 60) == 0 })
            #expect(visits.allSatisfy { $0.ends.timeIntervalSince1970.truncatingRemainder(dividingBy: 60) == 0 })
            #expect(plan.problems(for: request) == [])
            if request.from != nil { #expect(visits.allSatisfy { $0.starts >= from.addingTimeInterval(33) }) }
        }
    }

    @Test func theCheckCatchesAVisitOutOfItsWindowAndATaskPlannedTwice() throws {
        let facts = DayFacts.synthetic(workers: 4, tasks: 20, absences: 0, seed: 9)
        let request = DayRequest(facts: facts, hours: try DayHours(parsing: "07:00-16:00"))
        let plan = DayPlan.plan(request, timeLimit: .milliseconds(100))
        #expect(plan.problems(for: request) == [])
        let windowed = try #require(
            plan.routes.indices.lazy.flatMap { r in plan.routes[r].visits.indices.map { (r, $0) } }.first { r, v in
                facts.tasks.first { $0.id == plan.routes[r].visits[v].taskID }?.window != nil
            })
        var late = plan
        late.routes[windowed.0].visits[windowed.1].starts.addTimeInterval(6 * 3600)
        #expect(late.problems(for: request).contains { $0.contains("starts outside its window") })
        var twice = plan
        let visit = plan.routes[windowed.0].visits[windowed.1]
        twice.routes[windowed.0].visits.append(visit)
        #expect(twice.problems(for: request).contains { $0.contains("is planned 2 times") })
    }
}
