import Foundation
import TeamworkModel

/// How long a drive takes without a road network: the great-circle distance, times a road
/// factor (roads are not straight), at an average speed. The defaults are a city's.
public struct TravelEstimate: Sendable, Equatable {
    public var roadFactor: Double
    public var kilometresPerHour: Double

    public init(roadFactor: Double = 1.3, kilometresPerHour: Double = 30) {
        self.roadFactor = roadFactor
        self.kilometresPerHour = kilometresPerHour
    }

    /// Minutes from one point to another.
    public func minutes(from a: (latitude: Double, longitude: Double), to b: (latitude: Double, longitude: Double)) -> Double {
        let metres = GreatCircle.meters(fromLatitude: a.latitude, longitude: a.longitude, toLatitude: b.latitude, longitude: b.longitude)
        return metres / 1000 * roadFactor / kilometresPerHour * 60
    }
}

/// A team's day as the planner sees it: its open work, who can do it and from where, and the
/// rules of the day (hours on the team's clock, time on site, how drives are estimated).
public struct DayRequest: Sendable {
    public struct Worker: Sendable {
        public var person: Person
        /// Where they start and end the day; `nil`: the middle of the day's sites.
        public var home: (latitude: Double, longitude: Double)?

        public init(person: Person, home: (latitude: Double, longitude: Double)?) {
            self.person = person
            self.home = home
        }
    }

    public var day: LocalDate
    public var zone: Zone
    public var tasks: [FieldTask]
    public var workers: [Worker]
    /// Each task's site, by location id.
    public var sites: [Int64: (latitude: Double, longitude: Double, name: String)]
    public var hours: (start: LocalTime, end: LocalTime)
    /// Time on site of a task.
    public var minutesOnSite: Double
    public var travel: TravelEstimate

    public init(
        day: LocalDate, zone: Zone, tasks: [FieldTask], workers: [Worker],
        sites: [Int64: (latitude: Double, longitude: Double, name: String)],
        hours: (start: LocalTime, end: LocalTime), minutesOnSite: Double = 45, travel: TravelEstimate = TravelEstimate()
    ) {
        self.day = day
        self.zone = zone
        self.tasks = tasks
        self.workers = workers
        self.sites = sites
        self.hours = hours
        self.minutesOnSite = minutesOnSite
        self.travel = travel
    }
}

/// The planner's answer for a day: each worker's visits in order with their times, and the
/// work left out with the reason.
public struct DayPlan: Sendable, Codable, Equatable {
    public struct Visit: Sendable, Codable, Equatable {
        public var taskID: Int64
        public var title: String
        /// When the worker gets there, and when work starts (later when they wait for the window).
        public var arrives: Date
        public var starts: Date
        public var ends: Date
        /// Whether the task changes hands (it was someone else's, or the team's).
        public var moved: Bool
    }

    public struct Route: Sendable, Codable, Equatable {
        public var personID: Int64
        public var name: String
        public var visits: [Visit]
        public var drivingMinutes: Double
    }

    public struct LeftOut: Sendable, Codable, Equatable {
        public var taskID: Int64
        public var title: String
        public var reason: String
    }

    public var routes: [Route]
    public var leftOut: [LeftOut]

    /// Plans `request` within `timeLimit`: started work stays with whoever started it; urgent and
    /// high work is served first (leaving a task out costs by its priority), then the least driving.
    public static func plan(_ request: DayRequest, seed: UInt64 = 1, timeLimit: Duration = .seconds(1)) -> DayPlan {
        let midnight = request.zone.instant(request.day, LocalTime(hour: 0, minute: 0)!)
        func minutes(_ date: Date) -> Double { date.timeIntervalSince(midnight) / 60 }
        func date(_ minutes: Double) -> Date { midnight.addingTimeInterval(minutes * 60) }
        let open = request.tasks.filter { !$0.status.isClosed }
        let placed = open.compactMap { $0.locationID.flatMap { request.sites[$0] } }
        let middle =
            placed.isEmpty
            ? (latitude: 0.0, longitude: 0.0)
            : (
                latitude: placed.map(\.latitude).reduce(0, +) / Double(placed.count),
                longitude: placed.map(\.longitude).reduce(0, +) / Double(placed.count)
            )
        // Places: each worker's home, then each task's site (a task without one is where the worker is).
        var points: [(latitude: Double, longitude: Double)?] = request.workers.map { $0.home ?? middle }
        let taskPlace = open.map { task -> Int in
            points.append(task.locationID.flatMap { request.sites[$0] }.map { (latitude: $0.latitude, longitude: $0.longitude) })
            return points.count - 1
        }
        let travel = points.map { a in
            points.map { b -> Double in
                guard let a, let b else { return 0 }
                return request.travel.minutes(from: a, to: b)
            }
        }
        let dayStart = minutes(request.zone.instant(request.day, request.hours.start))
        let dayEnd = minutes(request.zone.instant(request.day, request.hours.end))
        let workerIndex = Dictionary(uniqueKeysWithValues: request.workers.enumerated().map { ($1.person.id, $0) })
        let jobs = open.enumerated().map { index, task -> RoutingProblem.Job in
            var earliest = 0.0
            var latest = 24 * 60.0
            if let window = task.window {
                earliest = minutes(window.start)
                latest = max(earliest, minutes(window.end) - request.minutesOnSite)
            } else if let due = task.dueAt {
                latest = minutes(due) - request.minutesOnSite
            }
            let penalty: Double =
                switch task.priority {
                case .urgent: 1_000_000
                case .high: 100_000
                case .normal: 10_000
                case .low: 1_000
                }
            return RoutingProblem.Job(
                place: taskPlace[index], earliest: earliest, latest: latest, service: request.minutesOnSite,
                skills: Set(task.requiredSkills), penalty: penalty,
                pinnedTo: task.status == .inProgress ? task.assigneeID.flatMap { workerIndex[$0] } : nil)
        }
        let vehicles = request.workers.enumerated().map { index, worker in
            RoutingProblem.Vehicle(
                start: index, end: index, earliest: dayStart, latest: dayEnd, skills: Set(worker.person.skills))
        }
        let problem = RoutingProblem(jobs: jobs, vehicles: vehicles, travel: travel)
        let solution = RouteSolver(seed: seed, timeLimit: timeLimit).solve(problem)
        var routes: [Route] = []
        for (v, route) in solution.routes.enumerated() {
            let starts = solution.starts(of: v, in: problem)
            var at = v
            var time = dayStart
            var visits: [Visit] = []
            var driving = 0.0
            for (j, start) in zip(route, starts) {
                let task = open[j]
                let arrives = time + travel[at][jobs[j].place]
                driving += travel[at][jobs[j].place]
                visits.append(
                    Visit(
                        taskID: task.id, title: task.title, arrives: date(arrives), starts: date(start),
                        ends: date(start + request.minutesOnSite), moved: task.assigneeID != request.workers[v].person.id))
                time = start + request.minutesOnSite
                at = jobs[j].place
            }
            if !route.isEmpty { driving += travel[at][v] }
            routes.append(
                Route(
                    personID: request.workers[v].person.id, name: request.workers[v].person.displayName, visits: visits,
                    drivingMinutes: driving.rounded()))
        }
        let leftOut = solution.unassigned.map { j -> LeftOut in
            LeftOut(taskID: open[j].id, title: open[j].title, reason: reason(j, problem: problem, task: open[j], request: request))
        }
        return DayPlan(routes: routes, leftOut: leftOut)
    }

    /// Why job `j` could not be planned, in the dispatcher's words.
    static func reason(_ j: Int, problem: RoutingProblem, task: FieldTask, request: DayRequest) -> String {
        let able = problem.vehicles.indices.filter { problem.allows($0, j) }
        if able.isEmpty {
            if !task.requiredSkills.isEmpty { return "no one on the team has \(task.requiredSkills.joined(separator: ", "))" }
            return "no one on the team can take it"
        }
        let job = problem.jobs[j]
        let reachable = able.contains { v in
            let vehicle = problem.vehicles[v]
            let begin = max(vehicle.earliest + problem.travel[vehicle.start][job.place], job.earliest)
            return begin <= job.latest && begin + job.service + problem.travel[job.place][vehicle.end] <= vehicle.latest
        }
        if !reachable {
            return "its window does not fit anyone's hours (\(request.hours.start)–\(request.hours.end)) with the drive"
        }
        return "the day is full: no one who can take it has room in their hours"
    }
}
