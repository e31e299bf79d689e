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

    /// Seen on main: a re-plan two minutes later reordered the day, and one after a sick call gave
    /// most of the crew's tasks to someone else. A task now stays with who has it unless moving it
    /// saves more than 20 minutes of driving: after the busiest worker goes home, few of the other
    /// tasks change hands (many more without the cost), and a plan made again with nothing changed
    /// moves at most one. (A fixed number of iterations: the same plans on every run.)
    @Test func aReplanChangesOnlyWhatItMust() throws {
        let facts = DayFacts.synthetic(workers: 8, tasks: 60, absences: 0, seed: 5)
        let first = DayPlan.plan(DayRequest(facts: facts, hours: .usual), seed: 5, iterations: 3000)
        let day = first.applied(to: facts)
        #expect(first.changes.count > 30, "a first plan sets every time")
        let again = DayPlan.plan(DayRequest(facts: day, hours: .usual), seed: 6, iterations: 3000)
        // Nothing changed: at most one task changes hands (the solver is a heuristic: a second look may
        // still find a move that saves more than 20 minutes).
        #expect(again.moves.count <= 1, "nothing changed: \(again.changeSummary)")
        let busiest = try #require(first.routes.max { $0.visits.count < $1.visits.count })
        var sick = day
        let index = try #require(sick.members.firstIndex { $0.person.id == busiest.personID })
        let span = sick.zone.day(sick.day)
        sick.members[index].absences.append(
            Absence(id: 1, personID: busiest.personID, startsAt: span.start, endsAt: span.end, reason: .sick, note: ""))
        let theirs = Set(busiest.visits.map(\.taskID))
        var shares: [(person: Double, time: Double)] = []
        for keep in [true, false] {
            var request = DayRequest(facts: sick, hours: .usual)
            if !keep { (request.moveMinutes, request.retimeMinutes) = (0, 0) }
            let replan = DayPlan.plan(request, seed: 6, iterations: 3000)
            #expect(replan.problems(for: request) == [])
            #expect(!replan.routes.contains { $0.personID == busiest.personID })
            shares.append(replan.changedShare(from: first, except: theirs))
        }
        #expect(shares[0].person <= 0.15 && shares[0].person < shares[1].person, "with the costs \(shares[0]), without \(shares[1])")
        #expect(shares[0].time < shares[1].time, "times kept where they can be: with \(shares[0]), without \(shares[1])")
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
