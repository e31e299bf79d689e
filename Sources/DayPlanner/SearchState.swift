/// One plan under search, with what makes an insertion's feasibility a constant-time check:
/// for each route, when service begins at each job (as early as the route allows), and the latest
/// each job may begin for the rest of the route to stay feasible.
struct SearchState {
    let problem: RoutingProblem
    /// Vehicles that are the same for planning share a kind: only one empty route of a kind is tried.
    let kinds: [Int]
    var routes: [[Int]]
    var loads: [Double]
    var begins: [[Double]]
    var latest: [[Double]]
    var distances: [Double]
    /// Per route, what its jobs that another vehicle has now cost for moving (``RoutingProblem/Job/moveCost``),
    /// and what its jobs' begins cost (``RoutingProblem/Job/lateness``).
    var moves: [Double]
    var waits: [Double]
    /// Jobs in no route.
    var pending: [Int] = []

    init(_ problem: RoutingProblem) {
        self.problem = problem
        var seen: [String: Int] = [:]
        kinds = problem.vehicles.map { v in
            let key = "\(v.start) \(v.end) \(v.earliest) \(v.latest) \(v.capacity) \(v.skills.sorted())"
            if let kind = seen[key] { return kind }
            seen[key] = seen.count
            return seen.count - 1
        }
        let count = problem.vehicles.count
        routes = Array(repeating: [], count: count)
        loads = Array(repeating: 0, count: count)
        begins = Array(repeating: [], count: count)
        latest = Array(repeating: [], count: count)
        distances = Array(repeating: 0, count: count)
        moves = Array(repeating: 0, count: count)
        waits = Array(repeating: 0, count: count)
    }

    var distance: Double { distances.reduce(0, +) }
    var cost: Double {
        distance + moves.reduce(0, +) + waits.reduce(0, +) + pending.reduce(0) { $0 + problem.jobs[$1].penalty }
    }

    /// What job `u`'s service beginning at `begin` costs: its lateness, and its change from the time it had.
    func timeCost(_ u: Int, begin: Double) -> Double {
        let job = problem.jobs[u]
        return job.lateness * begin + (job.was.map { abs(begin - $0) * job.retimeCost } ?? 0)
    }

    /// What job `u` costs on route `r` for leaving the vehicle that has it now.
    func moveCost(_ u: Int, route r: Int) -> Double {
        let job = problem.jobs[u]
        guard let stays = job.stays, stays != r else { return 0 }
        return job.moveCost
    }
    var plan: RoutingPlan { RoutingPlan(routes: routes, unassigned: pending.sorted()) }

    /// Recomputes route `r`'s load, distance, begins and latest starts.
    mutating func refresh(_ r: Int) {
        let vehicle = problem.vehicles[r]
        let route = routes[r]
        var load = 0.0
        var distance = 0.0
        moves[r] = route.reduce(0) { $0 + moveCost($1, route: r) }
        var begin = [Double](repeating: 0, count: route.count)
        var at = vehicle.start
        var time = vehicle.earliest
        for (i, j) in route.enumerated() {
            let job = problem.jobs[j]
            load += job.load
            distance += problem.travel[at][job.place]
            time = max(time + problem.travel[at][job.place], job.earliest)
            begin[i] = time
            time += job.service
            at = job.place
        }
        distance += route.isEmpty ? 0 : problem.travel[at][vehicle.end]
        waits[r] = zip(route, begin).reduce(0) { $0 + timeCost($1.0, begin: $1.1) }
        var late = [Double](repeating: 0, count: route.count)
        var next = vehicle.end
        var nextLatest = vehicle.latest
        for i in route.indices.reversed() {
            let job = problem.jobs[route[i]]
            late[i] = min(job.latest, nextLatest - problem.travel[job.place][next] - job.service)
            next = job.place
            nextLatest = late[i]
        }
        loads[r] = load
        distances[r] = distance
        begins[r] = begin
        latest[r] = late
    }

    /// What putting job `u` before position `p` of route `r` adds to the travel, or `nil` when it breaks a rule.
    func insertionCost(_ u: Int, route r: Int, at p: Int) -> Double? {
        let job = problem.jobs[u]
        let vehicle = problem.vehicles[r]
        let route = routes[r]
        let previous = p == 0 ? vehicle.start : problem.jobs[route[p - 1]].place
        let departure = p == 0 ? vehicle.earliest : begins[r][p - 1] + problem.jobs[route[p - 1]].service
        let begin = max(departure + problem.travel[previous][job.place], job.earliest)
        guard begin <= job.latest else { return nil }
        let next = p == route.count ? vehicle.end : problem.jobs[route[p]].place
        let nextLatest = p == route.count ? vehicle.latest : latest[r][p]
        guard begin + job.service + problem.travel[job.place][next] <= nextLatest else { return nil }
        // Its own begin's cost (the later jobs' shift is left to the route's total).
        let moved = moveCost(u, route: r) + timeCost(u, begin: begin)
        if route.isEmpty { return moved + problem.travel[vehicle.start][job.place] + problem.travel[job.place][vehicle.end] }
        return moved + problem.travel[previous][job.place] + problem.travel[job.place][next] - problem.travel[previous][next]
    }

    /// Puts each of `jobs`, in order, where it adds least travel (a place skipped with probability
    /// `blink`); a job with no feasible place waits in ``pending``.
    mutating func insert(_ jobs: [Int], random: inout SplitMix, blink: Double) {
        pending.removeAll { jobs.contains($0) }
        for u in jobs {
            var best: (cost: Double, route: Int, position: Int)?
            var emptyKindsTried = Set<Int>()
            for r in routes.indices where problem.allows(r, u) {
                guard loads[r] + problem.jobs[u].load <= problem.vehicles[r].capacity else { continue }
                if routes[r].isEmpty {
                    guard emptyKindsTried.insert(kinds[r]).inserted || problem.jobs[u].pinnedTo == r || problem.jobs[u].stays == r
                    else { continue }
                }
                for p in 0...routes[r].count {
                    if blink > 0, random.unit() < blink { continue }
                    guard let cost = insertionCost(u, route: r, at: p) else { continue }
                    if best == nil || cost < best!.cost { best = (cost, r, p) }
                }
            }
            if let best {
                routes[best.route].insert(u, at: best.position)
                refresh(best.route)
            } else {
                pending.append(u)
            }
        }
    }

    /// Takes strings of neighbouring jobs out of a few routes (SISR's string removal, Christiaens
    /// and Vanden Berghe 2020), about `average` jobs in all; they wait in ``pending``. What was taken.
    mutating func ruin(random: inout SplitMix, neighbours: [[Int]], average: Double = 10, longest: Int = 10) -> [Int] {
        var routeOf = [Int](repeating: -1, count: problem.jobs.count)
        for (r, route) in routes.enumerated() { for j in route { routeOf[j] = r } }
        let used = routes.filter { !$0.isEmpty }
        guard !used.isEmpty else { return [] }
        // Now and then a whole route, chosen at random: with few long routes (a wide-window day),
        // strings alone never empty one, and a plan with a worker fewer can be shorter.
        if used.count > 1, random.unit() < 0.05 {
            let candidates = routes.indices.filter { !routes[$0].isEmpty && routes[$0].allSatisfy { problem.jobs[$0].pinnedTo == nil } }
            if !candidates.isEmpty {
                let r = candidates[random.below(candidates.count)]
                let taken = routes[r]
                routes[r] = []
                refresh(r)
                pending += taken
                return taken
            }
        }
        let meanLength = Double(used.reduce(0) { $0 + $1.count }) / Double(used.count)
        let stringMost = min(Double(longest), meanLength)
        let routesMost = 4 * average / (1 + stringMost) - 1
        let routesToRuin = Int(random.unit() * routesMost) + 1
        let assigned = problem.jobs.indices.filter { routeOf[$0] >= 0 }
        guard !assigned.isEmpty else { return [] }
        let seed = assigned[random.below(assigned.count)]
        var ruined = Set<Int>()
        var removed: [Int] = []
        for c in [seed] + neighbours[seed] where ruined.count < routesToRuin {
            let r = routeOf[c]
            guard r >= 0, !ruined.contains(r), problem.jobs[c].pinnedTo == nil else { continue }
            ruined.insert(r)
            let route = routes[r]
            let length = min(route.count, Int(random.unit() * stringMost) + 1)
            guard let at = route.firstIndex(of: c) else { continue }
            // A string of `length` jobs that holds `c`, placed at random around it.
            let first = max(0, min(route.count - length, at - random.below(length)))
            let taken = route[first..<first + length].filter { problem.jobs[$0].pinnedTo == nil }
            routes[r].removeAll { taken.contains($0) }
            removed += taken
            refresh(r)
        }
        pending += removed
        return removed
    }

    /// Orders the jobs waiting to go back (SISR's orders: at random, largest load, farthest, closest).
    mutating func sort(removed: [Int], random: inout SplitMix) {
        let roll = random.below(11)
        var jobs = pending
        for i in stride(from: jobs.count - 1, to: 0, by: -1) { jobs.swapAt(i, random.below(i + 1)) }
        let home = problem.vehicles.first?.start ?? 0
        func far(_ j: Int) -> Double { problem.travel[home][problem.jobs[j].place] }
        switch roll {
        case 0..<4: break
        case 4..<8: jobs.sort { problem.jobs[$0].load > problem.jobs[$1].load }
        case 8..<10: jobs.sort { far($0) > far($1) }
        default: jobs.sort { far($0) < far($1) }
        }
        pending = jobs
    }
}
