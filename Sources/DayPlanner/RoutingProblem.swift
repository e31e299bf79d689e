/// A vehicle routing problem with time windows, as the day planner and the VRPTW benchmark pose
/// it: places with a travel time between each two, jobs at places (a window to start in, a time
/// on site, a load, skills they need, a cost of leaving them out), and vehicles (workers) that
/// start and end at places within their hours. Times are in one unit (minutes, or the
/// benchmark's), measured from the same origin. No I/O: a value the solver reads.
public struct RoutingProblem: Sendable {
    public struct Job: Sendable {
        /// Where the job is: an index into the travel matrix.
        public var place: Int
        /// Service may start no earlier than `earliest` (arriving earlier, one waits) and no later than `latest`.
        public var earliest: Double
        public var latest: Double
        /// Time on site.
        public var service: Double
        /// What it takes of a vehicle's capacity.
        public var load: Double
        /// Skills the job needs: a vehicle without every one cannot take it.
        public var skills: Set<String>
        /// What leaving the job out costs, in units of travel (urgent work costs more).
        public var penalty: Double
        /// The vehicle the job must stay with (started or pinned work), if any; -1: none may take it
        /// (it is held by someone who is not working).
        public var pinnedTo: Int?
        /// The vehicle that has the job now, if any, and what giving it to another costs, in units of
        /// travel: a re-plan changes only what it must.
        public var stays: Int?
        public var moveCost: Double = 0
        /// What each minute its service begins later costs, in units of travel: urgent work is served
        /// early when that costs little driving. 0: only its window and due time matter.
        public var lateness: Double = 0
        /// When its service was to begin in the plan before (nil: none), and what each minute of
        /// change from it costs, in units of travel: a re-plan keeps times where it can.
        public var was: Double?
        public var retimeCost: Double = 0

        public init(
            place: Int, earliest: Double, latest: Double, service: Double, load: Double = 0, skills: Set<String> = [],
            penalty: Double = 1_000_000, pinnedTo: Int? = nil, stays: Int? = nil, moveCost: Double = 0, lateness: Double = 0,
            was: Double? = nil, retimeCost: Double = 0
        ) {
            self.was = was
            self.retimeCost = retimeCost
            self.stays = stays
            self.moveCost = moveCost
            self.lateness = lateness
            self.place = place
            self.earliest = earliest
            self.latest = latest
            self.service = service
            self.load = load
            self.skills = skills
            self.penalty = penalty
            self.pinnedTo = pinnedTo
        }
    }

    public struct Vehicle: Sendable {
        /// Where the vehicle starts and ends (indices into the travel matrix).
        public var start: Int
        public var end: Int
        /// It leaves no earlier than `earliest` and is back by `latest`.
        public var earliest: Double
        public var latest: Double
        public var capacity: Double
        public var skills: Set<String>

        public init(
            start: Int, end: Int, earliest: Double, latest: Double, capacity: Double = .infinity, skills: Set<String> = []
        ) {
            self.start = start
            self.end = end
            self.earliest = earliest
            self.latest = latest
            self.capacity = capacity
            self.skills = skills
        }
    }

    public var jobs: [Job]
    public var vehicles: [Vehicle]
    /// `travel[a][b]`: the time (and the distance the objective counts) from place `a` to place `b`.
    public var travel: [[Double]]

    public init(jobs: [Job], vehicles: [Vehicle], travel: [[Double]]) {
        self.jobs = jobs
        self.vehicles = vehicles
        self.travel = travel
    }

    /// Whether vehicle `v` may ever take job `j` (skills and pinning).
    public func allows(_ v: Int, _ j: Int) -> Bool {
        let job = jobs[j]
        if let pinned = job.pinnedTo, pinned != v { return false }
        return job.skills.isSubset(of: vehicles[v].skills) && job.load <= vehicles[v].capacity
    }
}

/// What the solver found: each vehicle's jobs in visiting order, and the jobs left out.
public struct RoutingPlan: Sendable, Equatable {
    public var routes: [[Int]]
    public var unassigned: [Int]

    public init(routes: [[Int]], unassigned: [Int]) {
        self.routes = routes
        self.unassigned = unassigned
    }

    /// The total travel of the routes (depot to depot; an empty route costs nothing).
    public func distance(in problem: RoutingProblem) -> Double {
        var total = 0.0
        for (v, route) in routes.enumerated() where !route.isEmpty {
            var at = problem.vehicles[v].start
            for j in route {
                total += problem.travel[at][problem.jobs[j].place]
                at = problem.jobs[j].place
            }
            total += problem.travel[at][problem.vehicles[v].end]
        }
        return total
    }

    /// When service starts at each job of vehicle `v`'s route (arriving early, it waits).
    public func starts(of v: Int, in problem: RoutingProblem) -> [Double] {
        var time = problem.vehicles[v].earliest
        var at = problem.vehicles[v].start
        return routes[v].map { j in
            let job = problem.jobs[j]
            time = max(time + problem.travel[at][job.place], job.earliest)
            defer {
                time += job.service
                at = job.place
            }
            return time
        }
    }
}

extension RoutingPlan {
    /// Every rule the plan breaks, in words (empty: feasible): each job in exactly one route or left
    /// out, windows, hours, capacity, skills, pinning. Checked by walking each route as a worker
    /// would, apart from the solver's own bookkeeping.
    public func problems(in problem: RoutingProblem, tolerance: Double = 1e-6) -> [String] {
        var found: [String] = []
        var seen = [Int](repeating: 0, count: problem.jobs.count)
        for j in routes.joined() where problem.jobs.indices.contains(j) { seen[j] += 1 }
        for j in unassigned where problem.jobs.indices.contains(j) { seen[j] += 1 }
        for (j, count) in seen.enumerated() where count != 1 { found.append("job \(j) appears \(count) times") }
        if routes.count != problem.vehicles.count { found.append("\(routes.count) routes for \(problem.vehicles.count) vehicles") }
        for (v, route) in routes.enumerated() where v < problem.vehicles.count && !route.isEmpty {
            let vehicle = problem.vehicles[v]
            var time = vehicle.earliest
            var at = vehicle.start
            var load = 0.0
            for j in route {
                guard problem.jobs.indices.contains(j) else {
                    found.append("vehicle \(v): no job \(j)")
                    continue
                }
                let job = problem.jobs[j]
                if !problem.allows(v, j) { found.append("vehicle \(v) may not take job \(j) (skills or pinning)") }
                time = max(time + problem.travel[at][job.place], job.earliest)
                if time > job.latest + tolerance { found.append("vehicle \(v) starts job \(j) at \(time), after \(job.latest)") }
                time += job.service
                load += job.load
                at = job.place
            }
            if load > vehicle.capacity + tolerance { found.append("vehicle \(v) carries \(load) of \(vehicle.capacity)") }
            time += problem.travel[at][vehicle.end]
            if time > vehicle.latest + tolerance { found.append("vehicle \(v) is back at \(time), after \(vehicle.latest)") }
        }
        return found
    }
}
