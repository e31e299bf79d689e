import DayPlanner
import Testing

/// The route solver's plans, each checked by walking its routes (``RoutingPlan/problems(in:)``),
/// apart from the solver's own bookkeeping.
@Suite("The day planner's route solver")
struct RouteSolverTests {
    /// A reproducible day: `jobs` calls scattered over a 100 × 100 area around a depot at the
    /// centre, windows of 60 to 180 minutes within 8 hours, 20 to 45 minutes on site, and
    /// `vehicles` workers from 0 to 540; every third job needs climbing, which every other worker has.
    static func day(jobs count: Int, vehicles: Int, seed: UInt64) -> RoutingProblem {
        var state = seed
        func random() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(state >> 11) / Double(1 << 53)
        }
        var points = [(50.0, 50.0)]
        var jobs: [RoutingProblem.Job] = []
        for index in 0..<count {
            points.append((random() * 100, random() * 100))
            let earliest = (random() * 360).rounded()
            jobs.append(
                .init(
                    place: index + 1, earliest: earliest, latest: earliest + 60 + (random() * 120).rounded(),
                    service: 20 + (random() * 25).rounded(), load: 1, skills: index % 3 == 0 ? ["climbing"] : []))
        }
        let travel = points.map { a in points.map { b in ((a.0 - b.0) * (a.0 - b.0) + (a.1 - b.1) * (a.1 - b.1)).squareRoot() } }
        let fleet = (0..<vehicles).map { v in
            RoutingProblem.Vehicle(start: 0, end: 0, earliest: 0, latest: 540, capacity: 12, skills: v % 2 == 0 ? ["climbing"] : [])
        }
        return RoutingProblem(jobs: jobs, vehicles: fleet, travel: travel)
    }

    /// Seen on main (issue 50): urgent work was left late when serving it early cost little driving.
    /// On a road from the depot (0) to the worker's home (15), jobs at 5, 10 and an urgent one at 15,
    /// an hour on site each: taking the urgent one first costs 20 minutes more driving and starts it
    /// two hours earlier. With a quarter of a driving minute per minute late, it goes first; with no
    /// lateness cost, last (the shortest drive).
    @Test func urgentWorkIsServedEarlyWhenThatCostsLittleDriving() {
        let places = [0.0, 15, 5, 10, 15]
        let travel = places.map { a in places.map { b in abs(a - b) } }
        func plan(lateness: Double) -> [Int] {
            let jobs = [
                RoutingProblem.Job(place: 2, earliest: 0, latest: 480, service: 60),
                RoutingProblem.Job(place: 3, earliest: 0, latest: 480, service: 60),
                RoutingProblem.Job(place: 4, earliest: 0, latest: 480, service: 60, lateness: lateness),
            ]
            let problem = RoutingProblem(
                jobs: jobs, vehicles: [RoutingProblem.Vehicle(start: 0, end: 1, earliest: 0, latest: 480)], travel: travel)
            let solution = RouteSolver(seed: 1, iterations: 500).solve(problem)
            #expect(solution.problems(in: problem).isEmpty)
            return solution.routes[0]
        }
        #expect(plan(lateness: 0.25).first == 2, "urgent first: \(plan(lateness: 0.25))")
        #expect(plan(lateness: 0) == [0, 1, 2], "no lateness cost: the shortest drive")
    }

    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func everyPlanKeepsWindowsHoursCapacityAndSkillsAndHoldsEachJobOnce(seed: UInt64) {
        let problem = Self.day(jobs: 60, vehicles: 8, seed: seed)
        let plan = RouteSolver(seed: seed, iterations: 3_000).solve(problem)
        #expect(plan.problems(in: problem).isEmpty, "\(plan.problems(in: problem))")
        #expect(plan.routes.joined().count + plan.unassigned.count == 60)
    }

    @Test func searchingShortensTheFirstPlanAndTheSameSeedGivesTheSamePlan() {
        let problem = Self.day(jobs: 50, vehicles: 8, seed: 9)
        let first = RouteSolver(seed: 7, iterations: 0).solve(problem)
        let searched = RouteSolver(seed: 7, iterations: 4_000).solve(problem)
        #expect(searched.unassigned.count <= first.unassigned.count)
        #expect(searched.distance(in: problem) < first.distance(in: problem) * 0.97, "search improves a greedy first plan")
        #expect(RouteSolver(seed: 7, iterations: 4_000).solve(problem) == searched)
    }

    @Test func pinnedWorkStaysWithItsWorkerAndAJobNoOneCanReachIsLeftOut() {
        var problem = Self.day(jobs: 30, vehicles: 4, seed: 3)
        problem.jobs[5].pinnedTo = 3
        problem.jobs[5].skills = []
        problem.jobs[6].skills = ["diving"]  // nobody dives
        problem.jobs[7].earliest = 0
        problem.jobs[7].latest = 10  // 10 minutes after the start, and more than 10 away
        problem.travel[0][problem.jobs[7].place] = 50
        let plan = RouteSolver(seed: 1, iterations: 2_000).solve(problem)
        #expect(plan.problems(in: problem).isEmpty, "\(plan.problems(in: problem))")
        #expect(plan.routes[3].contains(5))
        #expect(plan.unassigned.contains(6) && plan.unassigned.contains(7))
    }

    @Test func theCheckerCatchesWhatItIsThere() {
        let problem = Self.day(jobs: 5, vehicles: 2, seed: 4)
        let late = RoutingPlan(routes: [[0, 1, 2, 3, 4], []], unassigned: [])
        let twice = RoutingPlan(routes: [[0], [0]], unassigned: [1, 2, 3, 4])
        #expect(!twice.problems(in: problem).isEmpty)
        // Five calls in one fixed order rarely all fit their windows; when they do, the checker agrees with a walk.
        let walked = late.starts(of: 0, in: problem)
        let broken = zip(late.routes[0], walked).contains { problem.jobs[$0].latest < $1 }
        #expect(broken == late.problems(in: problem).contains { $0.contains("starts job") })
    }

    @Test func aSolomonFileIsReadAsTheLiteratureReadsIt() throws {
        let text = """
            C999

            VEHICLE
            NUMBER     CAPACITY
              2         200

            CUSTOMER
            CUST NO.  XCOORD.   YCOORD.    DEMAND   READY TIME  DUE DATE   SERVICE   TIME

                0      40         50          0          0       1236          0
                1      45         68         10        912        967         90
                2      45         70         30        825        870         90
            """
        let instance = try SolomonInstance(name: "c999", text: text)
        #expect(instance.vehicles == 2 && instance.capacity == 200 && instance.customers.count == 3)
        let problem = instance.problem
        #expect(abs(problem.travel[0][1] - (25.0 + 324.0).squareRoot()) < 1e-9, "real-valued Euclidean")
        let plan = RouteSolver(seed: 1, iterations: 200).solve(problem)
        #expect(plan.problems(in: problem).isEmpty && plan.unassigned.isEmpty)
        #expect(throws: SolomonError.self) { try SolomonInstance(name: "junk", text: "not an instance") }
    }
}
