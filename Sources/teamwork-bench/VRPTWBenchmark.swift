import ArgumentParser
import DayPlanner
import Foundation

/// `teamwork-bench vrptw`: the day planner's solver on the 56 Solomon VRPTW instances, against
/// the literature's best-known solutions (distance-only and hierarchical), one instance at a time.
struct VRPTWBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vrptw",
        abstract: "The route solver on the Solomon VRPTW instances, with its gap to the best-known solutions."
    )

    @Option(help: "The benchmark set (solomon).") var set = "solomon"
    @Option(help: "Where the instances (solomon/*.txt) and bks.csv are.") var data = "../shared/vrptw"
    @Option(help: "The solver's time budget per instance, in seconds.") var seconds = 1.0
    @Option(help: "Only these instances, comma-separated (c101,r201).") var only: String?
    @Option(help: "The solver's seed.") var seed: UInt64 = 1
    @Option(help: "Write each instance's routes here as JSON.") var solutions: String?

    func validate() throws {
        guard set == "solomon" else { throw ValidationError("--set: only solomon is known") }
        guard seconds > 0, seconds <= 600 else { throw ValidationError("--seconds must be more than 0 and at most 600") }
    }

    func run() async throws {
        let folder = URL(fileURLWithPath: data)
        let bksText: String
        do {
            bksText = try String(contentsOf: folder.appending(path: "bks.csv"), encoding: .utf8)
        } catch {
            throw ValidationError(
                "cannot read \(folder.appending(path: "bks.csv").path): --data names the folder with bks.csv and solomon/")
        }
        var best: [String: (distance: (Int, Double)?, hierarchical: (Int, Double)?)] = [:]
        for line in bksText.split(whereSeparator: \.isNewline).dropFirst() {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 6, let vehicles = Int(fields[1]), let distance = Double(fields[2]) else { continue }
            if fields[5] == "distance" { best[fields[0], default: (nil, nil)].distance = (vehicles, distance) }
            if fields[5] == "hierarchical" { best[fields[0], default: (nil, nil)].hierarchical = (vehicles, distance) }
        }
        let directory = folder.appending(path: "solomon")
        var names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".txt") }.map {
            String($0.dropLast(4))
        }.sorted()
        if let only {
            let wanted = Set(only.split(separator: ",").map { $0.lowercased() })
            names = names.filter { wanted.contains($0) }
        }
        guard !names.isEmpty else { throw ValidationError("no instances in \(directory.path)") }
        if let solutions { try FileManager.default.createDirectory(atPath: solutions, withIntermediateDirectories: true) }
        print(
            "machine: \(ProcessInfo.processInfo.activeProcessorCount) cores; solver: ruin and recreate, \(seconds) s an instance, seed \(seed)"
        )
        print("instance  vehicles  distance    best(dist)  gap      best(hier)       gap(hier)  feasible")
        var gaps: [Double] = []
        var atBest = 0
        var infeasible = 0
        var vehiclesOver = 0
        for name in names {
            let text = try String(contentsOf: directory.appending(path: "\(name).txt"), encoding: .utf8)
            let instance = try SolomonInstance(name: name, text: text)
            let problem = instance.problem
            let plan = RouteSolver(seed: seed, timeLimit: .milliseconds(Int(seconds * 1000))).solve(problem)
            let distance = plan.distance(in: problem)
            let used = plan.routes.filter { !$0.isEmpty }.count
            let problems = plan.problems(in: problem)
            let feasible = problems.isEmpty && plan.unassigned.isEmpty
            if !feasible { infeasible += 1 }
            var gapText = "-"
            if let bks = best[name]?.distance {
                let gap = (distance - bks.1) / bks.1 * 100
                gaps.append(gap)
                if gap <= 0.005 { atBest += 1 }
                gapText = String(format: "%+.2f%%", gap)
            }
            var hierText = "-"
            if let bks = best[name]?.hierarchical {
                vehiclesOver += max(0, used - bks.0)
                hierText = String(format: "%d / %.2f  %+.2f%%", bks.0, bks.1, (distance - bks.1) / bks.1 * 100)
            }
            let bestText = best[name]?.distance.map { String(format: "%.2f", $0.1) } ?? "-"
            print(
                name.padding(toLength: 10, withPad: " ", startingAt: 0)
                    + String(format: "%-10d%-12.2f", used, distance) + bestText.padding(toLength: 12, withPad: " ", startingAt: 0)
                    + gapText.padding(toLength: 9, withPad: " ", startingAt: 0)
                    + hierText.padding(toLength: 27, withPad: " ", startingAt: 0)
                    + (feasible ? "yes" : "NO: \(plan.unassigned.count) left out; \(problems.prefix(2).joined(separator: "; "))"))
            if let solutions {
                // Customer ids as the instance numbers them (job j is customer j + 1).
                let routes = plan.routes.filter { !$0.isEmpty }.map { $0.map { $0 + 1 } }
                let json = try JSONSerialization.data(withJSONObject: ["instance": name, "routes": routes], options: [.sortedKeys])
                try json.write(to: URL(fileURLWithPath: solutions).appending(path: "\(name).json"))
            }
        }
        let sorted = gaps.sorted()
        let mean = gaps.isEmpty ? 0 : gaps.reduce(0, +) / Double(gaps.count)
        let median = sorted.isEmpty ? 0 : sorted[sorted.count / 2]
        print(
            String(
                format: "mean gap %.2f%% (median %.2f%%), %d at best-known, %d infeasible, vehicles over best-known %d", mean, median,
                atBest, infeasible, vehiclesOver))
    }
}
