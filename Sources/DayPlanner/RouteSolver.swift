/// Plans a ``RoutingProblem``: a greedy construction, then ruin and recreate (strings of
/// neighbouring jobs taken out and put back at their cheapest feasible places, a few places
/// skipped at random) under simulated annealing, keeping the best plan seen. Every plan it holds
/// is feasible: windows, hours, capacity, skills and pinning are checked at each insertion in
/// constant time (earliest starts forward, latest starts backward). The objective is travel plus
/// each left-out job's penalty. The same seed and iteration count give the same plan.
public struct RouteSolver: Sendable {
    public var seed: UInt64
    public var timeLimit: Duration
    /// Stops after this many iterations whatever the time (for a plan that must repeat exactly).
    public var iterations: Int?

    public init(seed: UInt64 = 1, timeLimit: Duration = .seconds(1), iterations: Int? = nil) {
        self.seed = seed
        self.timeLimit = timeLimit
        self.iterations = iterations
    }

    public func solve(_ problem: RoutingProblem) -> RoutingPlan {
        let deadline = ContinuousClock.now + timeLimit
        var random = SplitMix(seed: seed)
        var state = SearchState(problem)
        state.insert(Array(problem.jobs.indices), random: &random, blink: 0)
        var best = state.plan
        var bestCost = state.cost
        var current = state
        var currentCost = current.cost
        let neighbours = Self.neighbours(problem)
        // Temperatures relative to the travel of a first plan, cooling geometrically over the budget.
        let scale = max(1, state.distance / Double(max(1, problem.jobs.count)))
        let (hot, cold) = (scale * 2, scale * 0.01)
        var iteration = 0
        let started = ContinuousClock.now
        while true {
            if let iterations, iteration >= iterations { break }
            if iterations == nil, iteration % 64 == 0, ContinuousClock.now >= deadline { break }
            iteration += 1
            let progress: Double
            if let iterations {
                progress = Double(iteration) / Double(iterations)
            } else {
                progress = min(1, (ContinuousClock.now - started) / timeLimit)
            }
            let temperature = hot * pow(cold / hot, progress)
            var candidate = current
            let removed = candidate.ruin(random: &random, neighbours: neighbours)
            candidate.sort(removed: removed, random: &random)
            candidate.insert(candidate.pending, random: &random, blink: 0.01)
            let cost = candidate.cost
            if cost < currentCost - temperature * log(random.unit()) {
                current = candidate
                currentCost = cost
                if cost < bestCost - 1e-9 {
                    best = current.plan
                    bestCost = cost
                }
            }
        }
        return best
    }

    /// Each job's other jobs, nearest first.
    static func neighbours(_ problem: RoutingProblem) -> [[Int]] {
        problem.jobs.indices.map { j in
            problem.jobs.indices.filter { $0 != j }.sorted {
                problem.travel[problem.jobs[j].place][problem.jobs[$0].place]
                    < problem.travel[problem.jobs[j].place][problem.jobs[$1].place]
            }
        }
    }
}

/// A small, fast, seedable generator (SplitMix64): the same seed, the same plan.
struct SplitMix {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// In (0, 1].
    mutating func unit() -> Double { (Double(next() >> 11) + 1) / Double(1 << 53) }
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
