import Foundation
import TeamworkModel

/// A point on the earth.
public struct Coordinate: Sendable, Equatable, Codable {
    public var latitude: Double
    public var longitude: Double

    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }
}

/// How long a drive takes without a road network: the great-circle distance, times a road
/// factor (roads are not straight), at an average speed. A city's roads wind and are slow; the
/// country's are longer and faster.
public struct TravelEstimate: Sendable, Equatable {
    public var roadFactor: Double
    public var kilometresPerHour: Double

    public init(roadFactor: Double = 1.3, kilometresPerHour: Double = 30) {
        self.roadFactor = roadFactor
        self.kilometresPerHour = kilometresPerHour
    }

    /// The defaults of a team's area: urban ×1.3 at 30 km/h, rural ×1.4 at 60 km/h.
    public init(area: TravelArea) {
        switch area {
        case .urban: self.init(roadFactor: 1.3, kilometresPerHour: 30)
        case .rural: self.init(roadFactor: 1.4, kilometresPerHour: 60)
        }
    }

    /// Minutes from one point to another.
    public func minutes(from a: Coordinate, to b: Coordinate) -> Double {
        let metres = GreatCircle.meters(fromLatitude: a.latitude, longitude: a.longitude, toLatitude: b.latitude, longitude: b.longitude)
        return metres / 1000 * roadFactor / kilometresPerHour * 60
    }

    /// Minutes between each two of `places`; a place that is nowhere in particular (nil) is no drive from anywhere.
    public func matrix(_ places: [Coordinate?]) -> [[Double]] {
        places.map { a in places.map { b in a.flatMap { a in b.map { minutes(from: a, to: $0) } } ?? 0 } }
    }
}

/// A team's day as the planner sees it: what the master knows of it (``DayFacts``), the hours of
/// whoever has no week set, from when to plan (a re-plan keeps what was done before), and how
/// drives are estimated.
public struct DayRequest: Sendable {
    public var facts: DayFacts
    /// The hours of a member with no working week of their own.
    public var hours: DayHours
    /// Re-plan from this instant: nothing is planned to start before it, and workers set out from
    /// where they were last seen that day.
    public var from: Date?
    public var travel: TravelEstimate
    /// What giving a task to someone other than who has it costs, in minutes of driving: a re-plan
    /// changes only what it must (a task moves when that saves more than this). 0: no preference.
    public var moveMinutes: Double = 20
    /// What each minute an urgent task starts later costs, in minutes of driving: urgent work is
    /// served early when that costs little. 0: only windows and due times.
    public var urgentLateness: Double = Self.defaultUrgentLateness
    /// What each minute a task's expected start moves from the plan before costs, in minutes of
    /// driving: a re-plan keeps times where it can (a worker and a customer were told them). 0: free.
    public var retimeMinutes: Double = 0.05
    public static let defaultUrgentLateness = 0.1

    public init(facts: DayFacts, hours: DayHours, from: Date? = nil, travel: TravelEstimate? = nil) {
        self.facts = facts
        self.hours = hours
        self.from = from
        self.travel = travel ?? TravelEstimate(area: facts.team.travelArea)
    }

    /// A member who works that day, with the hours left to plan and where they start and end.
    struct Worker {
        var member: DayFacts.Member
        var hours: DateInterval
        var start: Coordinate?
        var end: Coordinate?
    }

    /// The work to plan (open, assigned or started that day) and its minutes on site.
    var open: [FieldTask] { facts.tasks.filter { !$0.status.isClosed } }

    /// Minutes on site of `task`: its own, else its team's.
    public func minutesOnSite(_ task: FieldTask) -> Double { task.minutesOnSite(team: facts.team) }

    func site(_ id: Int64?) -> Coordinate? {
        id.flatMap { facts.sites[$0] }.map { Coordinate(latitude: $0.latitude, longitude: $0.longitude) }
    }

    /// Who works and when; and why each of the others does not.
    func workers() -> (working: [Worker], away: [DayPlan.Away]) {
        var working: [Worker] = []
        var away: [DayPlan.Away] = []
        let placed = open.compactMap { site($0.locationID) }
        let middle =
            placed.isEmpty
            ? nil
            : Coordinate(
                latitude: placed.map(\.latitude).reduce(0, +) / Double(placed.count),
                longitude: placed.map(\.longitude).reduce(0, +) / Double(placed.count))
        let depot = site(facts.team.depotLocationID)
        let today = facts.zone.day(facts.day)
        for member in facts.members {
            let day = facts.workingDay(member, otherwise: hours)
            let person = member.person
            guard var at = day.at else {
                away.append(
                    DayPlan.Away(
                        personID: person.id, name: person.displayName,
                        why: day.away.map { "away (\($0.rawValue))" } ?? "not working that day"))
                continue
            }
            // Whole minutes, as every plan's times are (a re-plan asked at 10:03:27 starts at 10:04).
            if let from = from.map({ Date(timeIntervalSince1970: ($0.timeIntervalSince1970 / 60).rounded(.up) * 60) }), from > at.start {
                guard from < at.end else {
                    away.append(
                        DayPlan.Away(
                            personID: person.id, name: person.displayName,
                            why: day.away.map { "away (\($0.rawValue))" } ?? "done for the day"))
                    continue
                }
                at = DateInterval(start: from, end: at.end)
            }
            let home = site(person.homeLocationID) ?? depot
            let seenToday = member.position.flatMap {
                today.contains($0.at) ? Coordinate(latitude: $0.latitude, longitude: $0.longitude) : nil
            }
            // A re-plan sets out from where they are; a day from home (or the depot), else from their last check-in.
            let start =
                from != nil
                ? (seenToday ?? home)
                : (home ?? seenToday ?? member.position.map { Coordinate(latitude: $0.latitude, longitude: $0.longitude) })
            working.append(Worker(member: member, hours: at, start: start ?? middle, end: home))
        }
        return (working, away)
    }
}

/// The planner's answer for a day: each worker's visits in order with their times, who is not
/// working, and the work left out with the reason.
public struct DayPlan: Sendable, Codable, Equatable {
    public struct Visit: Sendable, Codable, Equatable {
        public var taskID: Int64
        public var title: String
        /// The task's version the plan was made from: applying refuses a task changed since.
        public var version: Int
        /// When the worker gets there, and when work starts (later when they wait for the window).
        public var arrives: Date
        public var starts: Date
        public var ends: Date
        /// Who had it before (nil: the team); it moves when that is not this route's worker.
        public var from: Int64?
        public var moved: Bool
        /// The expected start it had before (nil: none).
        public var was: Date?
        /// Work under way: it stays, and has no planned time to show.
        public var started: Bool

        /// Its expected start changes (by a minute or more).
        public var retimed: Bool { !started && was.map { abs($0.timeIntervalSince(starts)) >= 60 } ?? false }
        /// It changes hands or time: what a preview lists, and what a worker and a customer hear of.
        public var changes: Bool { moved || retimed }

        /// What happens to it, in words, for a preview: `started: stays`, `moves here from Nils Berg;
        /// was 10:40`, `was 10:40`, `stays`.
        public func words(names: [Int64: String], clock: (Date) -> String) -> String {
            if started { return "started: stays" }
            var parts: [String] = []
            if moved { parts.append("moves here from \(from.map { names[$0] ?? "person \($0)" } ?? "the team")") }
            if retimed, let was { parts.append("was \(clock(was))") }
            return parts.isEmpty ? "stays" : parts.joined(separator: "; ")
        }
    }

    public struct Route: Sendable, Codable, Equatable {
        public var personID: Int64
        public var name: String
        /// Their hours that day, as planned (from a re-plan's start).
        public var starts: Date
        public var ends: Date
        public var visits: [Visit]
        public var drivingMinutes: Double
    }

    public struct LeftOut: Sendable, Codable, Equatable {
        public var taskID: Int64
        public var title: String
        public var version: Int
        public var reason: String
        /// Who has it now; applying hands it back to the team unless it is started or pinned.
        public var assigneeID: Int64?
        public var keeps: Bool
    }

    /// A member who does not work (that day, or any more of it).
    public struct Away: Sendable, Codable, Equatable {
        public var personID: Int64
        public var name: String
        public var why: String
    }

    public var teamID: Int64
    public var day: LocalDate
    public var routes: [Route]
    public var away: [Away]
    public var leftOut: [LeftOut]

    /// The tasks that change hands.
    public var moves: [Visit] { routes.flatMap(\.visits).filter(\.moved) }
    /// The tasks that change hands or time.
    public var changes: [Visit] { routes.flatMap(\.visits).filter(\.changes) }

    /// `3 changes (1 to another person, 2 at another time)`, `no change`: what a preview says of itself.
    public var changeSummary: String {
        let (all, people) = (changes.count, moves.count)
        guard all > 0 else { return "no change" }
        let times = changes.filter { !$0.moved }.count
        var parts: [String] = []
        if people > 0 { parts.append("\(people) to another person") }
        if times > 0 { parts.append("\(times) at another time") }
        return quantity(all, "change") + " (" + parts.joined(separator: ", ") + ")"
    }

    /// Plans `request` within `timeLimit`: started and pinned work stays with whoever has it;
    /// windows (arrive early and wait), skills, each worker's hours and places are kept; urgent and
    /// high work is served first (leaving a task out costs by its priority), then the least driving.
    /// `travel`: minutes between ``places(_:)`` as a road network says; nil: the request's estimate.
    public static func plan(
        _ request: DayRequest, travel: [[Double]]? = nil, seed: UInt64 = 1, timeLimit: Duration = .seconds(1), iterations: Int? = nil
    ) -> DayPlan {
        let zone = request.facts.zone
        let midnight = zone.instant(request.facts.day, LocalTime(hour: 0, minute: 0)!)
        func minutes(_ date: Date) -> Double { date.timeIntervalSince(midnight) / 60 }
        func date(_ minutes: Double) -> Date { midnight.addingTimeInterval(minutes * 60) }
        let open = request.open
        let (workers, away) = request.workers()
        let places = Self.places(request, workers: workers)
        // The plan counts in whole minutes (drives rounded up, bounds inward), so every visit starts and
        // ends on one: the preview, the card, the phone and the customer read one time. (The preview
        // rounded where the card cut the seconds: a minute apart, seen on main.)
        let travel = (travel ?? request.travel.matrix(places)).map { $0.map { $0.rounded(.up) } }
        let workerIndex = Dictionary(uniqueKeysWithValues: workers.enumerated().map { ($1.member.person.id, $0) })
        let taskPlace = 2 * workers.count
        var pinnedAway: Set<Int> = []
        let jobs = open.enumerated().map { index, task -> RoutingProblem.Job in
            let service = request.minutesOnSite(task)
            var earliest = 0.0
            var latest = 48 * 60.0
            if let window = task.window {
                // An arrival window: work starts within it.
                earliest = minutes(window.start).rounded(.up)
                latest = max(earliest, minutes(window.end).rounded(.down))
            }
            if let due = task.dueAt { latest = min(latest, (minutes(due) - service).rounded(.down)) }
            let penalty: Double =
                switch task.priority {
                case .urgent: 1_000_000
                case .high: 100_000
                case .normal: 10_000
                case .low: 1_000
                }
            var pinned: Int?
            if task.status == .inProgress || task.pinned, let owner = task.assigneeID {
                pinned = workerIndex[owner]
                if pinned == nil { pinnedAway.insert(index) }
            }
            return RoutingProblem.Job(
                place: taskPlace + index, earliest: earliest, latest: max(earliest, latest), service: service,
                // Work that stays with its worker comes before anything else of theirs.
                skills: Set(task.requiredSkills), penalty: pinned != nil ? 100_000_000 : penalty,
                // Held by someone who is not working: no one else may take it.
                pinnedTo: pinnedAway.contains(index) ? -1 : pinned,
                // Whoever has it keeps it unless giving it away saves more than moveMinutes of driving.
                stays: task.assigneeID.flatMap { workerIndex[$0] }, moveCost: request.moveMinutes,
                // Urgent work early: a minute later costs a fraction of a minute's drive.
                lateness: task.priority == .urgent ? request.urgentLateness : 0,
                // Its time in the plan before: kept where it can be (started work has none to keep).
                was: task.status == .inProgress ? nil : task.plannedStart.map(minutes), retimeCost: request.retimeMinutes)
        }
        let vehicles = workers.enumerated().map { index, worker in
            RoutingProblem.Vehicle(
                start: index, end: workers.count + index, earliest: minutes(worker.hours.start).rounded(.up),
                latest: minutes(worker.hours.end).rounded(.down),
                skills: Set(worker.member.person.skills))
        }
        let problem = RoutingProblem(jobs: jobs, vehicles: vehicles, travel: travel)
        let solution = RouteSolver(seed: seed, timeLimit: timeLimit, iterations: iterations).solve(problem)
        var routes: [Route] = []
        for (v, route) in solution.routes.enumerated() {
            let worker = workers[v]
            let starts = solution.starts(of: v, in: problem)
            var at = vehicles[v].start
            var time = vehicles[v].earliest
            var visits: [Visit] = []
            var driving = 0.0
            for (j, start) in zip(route, starts) {
                let task = open[j]
                let arrives = time + travel[at][jobs[j].place]
                driving += travel[at][jobs[j].place]
                visits.append(
                    Visit(
                        taskID: task.id, title: task.title, version: task.version, arrives: date(arrives), starts: date(start),
                        ends: date(start + jobs[j].service), from: task.assigneeID,
                        moved: task.assigneeID != worker.member.person.id, was: task.plannedStart,
                        started: task.status == .inProgress))
                time = start + jobs[j].service
                at = jobs[j].place
            }
            if !route.isEmpty { driving += travel[at][vehicles[v].end] }
            routes.append(
                Route(
                    personID: worker.member.person.id, name: worker.member.person.displayName, starts: worker.hours.start,
                    ends: worker.hours.end, visits: visits, drivingMinutes: driving.rounded()))
        }
        let leftOut = solution.unassigned.map { j -> LeftOut in
            let task = open[j]
            return LeftOut(
                taskID: task.id, title: task.title, version: task.version,
                reason: reason(j, problem: problem, task: task, request: request, workers: workers, away: away),
                assigneeID: task.assigneeID, keeps: task.status == .inProgress || task.pinned || task.assigneeID == nil)
        }
        return DayPlan(teamID: request.facts.team.id, day: request.facts.day, routes: routes, away: away, leftOut: leftOut)
    }

    /// The places of a plan, in the travel matrix's order: each worker's start, each worker's end,
    /// then each open task's site (nil: nowhere in particular, no drive).
    public static func places(_ request: DayRequest) -> [Coordinate?] {
        places(request, workers: request.workers().working)
    }

    static func places(_ request: DayRequest, workers: [DayRequest.Worker]) -> [Coordinate?] {
        workers.map(\.start) + workers.map(\.end) + request.open.map { request.site($0.locationID) }
    }

    /// Why job `j` could not be planned, in the dispatcher's words.
    static func reason(
        _ j: Int, problem: RoutingProblem, task: FieldTask, request: DayRequest, workers: [DayRequest.Worker], away: [Away]
    ) -> String {
        let zone = request.facts.zone
        func clock(_ date: Date) -> String { zone.time(of: date).short }
        let job = problem.jobs[j]
        if job.pinnedTo == -1, let owner = task.assigneeID {
            let who = away.first { $0.personID == owner }
            let held = task.status == .inProgress ? "started by" : "pinned to"
            return "\(held) \(who?.name ?? "person \(owner)"), who is \(who?.why ?? "not on the team that day")"
        }
        let needs = task.requiredSkills.joined(separator: ", ")
        let able = problem.vehicles.indices.filter { problem.allows($0, j) }
        if able.isEmpty {
            if task.requiredSkills.isEmpty { return "no one on the team works that day" }
            let skilled = request.facts.members.filter { Set(task.requiredSkills).isSubset(of: $0.person.skills) }
            if skilled.isEmpty { return "no one on the team has \(needs)" }
            return "everyone with \(needs) is away or off that day (\(skilled.map(\.person.displayName).joined(separator: ", ")))"
        }
        let reachable = able.contains { v in
            let vehicle = problem.vehicles[v]
            let begin = max(vehicle.earliest + problem.travel[vehicle.start][job.place], job.earliest)
            return begin <= job.latest && begin + job.service + problem.travel[job.place][vehicle.end] <= vehicle.latest
        }
        if !reachable {
            let who = task.requiredSkills.isEmpty ? "no one" : "no one with \(needs)"
            let hours = able.map { "\(clock(workers[$0].hours.start))–\(clock(workers[$0].hours.end))" }
            let worked = Set(hours).sorted().joined(separator: ", ")
            if let from = request.from, let end = task.window?.end ?? task.dueAt, end <= from {
                return "its \(task.window == nil ? "due time" : "window") has passed (\(clock(end)))"
            }
            if let window = task.window {
                return
                    "\(who) works while its window is open (\(clock(window.start))–\(clock(window.end))), with the drive (hours: \(worked))"
            }
            return "\(who) can get there and finish before it is due, with the drive (hours: \(worked))"
        }
        return "the day is full: no one who can take it has room in their hours"
    }
}

extension DayPlan {
    /// What applying the plan does to each task: a visit goes to its worker with its start; work
    /// left out loses its expected start and goes back to the team, unless it is started or pinned.
    public var assignments: [PlannedAssignment] {
        routes.flatMap { route in
            route.visits.map {
                PlannedAssignment(taskID: $0.taskID, version: $0.version, assigneeID: route.personID, plannedStart: $0.starts)
            }
        }
            + leftOut.map {
                PlannedAssignment(taskID: $0.taskID, version: $0.version, assigneeID: $0.keeps ? $0.assigneeID : nil, plannedStart: nil)
            }
    }

    /// The day as it stands once this plan is applied (as the master applies it): each task with its
    /// worker and expected start, left-out work back to the team unless it keeps its holder.
    public func applied(to facts: DayFacts) -> DayFacts {
        var facts = facts
        let made = Dictionary(assignments.map { ($0.taskID, $0) }) { a, _ in a }
        for index in facts.tasks.indices {
            guard let a = made[facts.tasks[index].id] else { continue }
            if facts.tasks[index].assigneeID != a.assigneeID, facts.tasks[index].status != .inProgress {
                facts.tasks[index].status = a.assigneeID == nil ? .open : .assigned
            }
            facts.tasks[index].assigneeID = a.assigneeID
            facts.tasks[index].plannedStart = a.plannedStart
        }
        return facts
    }

    /// Of the tasks both plans hold, the share whose person or time changed from `before` to this
    /// plan, leaving out `except` (those a change of the day had to move): how much a re-plan unsettles.
    public func changedShare(from before: DayPlan, except: Set<Int64> = []) -> (person: Double, time: Double) {
        func index(_ plan: DayPlan) -> [Int64: (Int64?, Date?)] {
            Dictionary(
                plan.routes.flatMap { r in r.visits.map { ($0.taskID, (Optional(r.personID), Optional($0.starts))) } }
                    + plan.leftOut.map { ($0.taskID, (nil, nil)) }
            ) { a, _ in a }
        }
        let (old, new) = (index(before), index(self))
        let common = old.keys.filter { new[$0] != nil && !except.contains($0) }
        guard !common.isEmpty else { return (0, 0) }
        let person = common.filter { old[$0]!.0 != new[$0]!.0 }.count
        let time = common.filter { old[$0]!.1 != new[$0]!.1 }.count
        return (Double(person) / Double(common.count), Double(time) / Double(common.count))
    }
}

extension DayPlan {
    /// Every rule the plan breaks for `request`, in words (empty: none), checked from the master's
    /// facts and apart from the solver: each open task planned or left out exactly once; each route
    /// a member who works that day, within their hours (less absences, from a re-plan's start);
    /// work starting within its window and done by its due time, for its minutes on site, in order;
    /// skills; started and pinned work with whoever has it; nobody away with work.
    public func problems(for request: DayRequest, tolerance: TimeInterval = 1) -> [String] {
        var found: [String] = []
        let open = request.open
        let tasks = Dictionary(uniqueKeysWithValues: open.map { ($0.id, $0) })
        var seen: [Int64: Int] = [:]
        for id in routes.flatMap(\.visits).map(\.taskID) + leftOut.map(\.taskID) { seen[id, default: 0] += 1 }
        for task in open where seen[task.id] != 1 { found.append("task \(task.id) is planned \(seen[task.id] ?? 0) times") }
        for id in seen.keys where tasks[id] == nil { found.append("task \(id) is not open work of the day") }
        let members = Dictionary(uniqueKeysWithValues: request.facts.members.map { ($0.person.id, $0) })
        for route in routes {
            guard let member = members[route.personID] else {
                found.append("person \(route.personID) is not an active member")
                continue
            }
            guard var hours = request.facts.workingDay(member, otherwise: request.hours).at else {
                if !route.visits.isEmpty { found.append("\(route.name) has work but does not work that day") }
                continue
            }
            if let from = request.from, from > hours.start {
                guard from < hours.end else {
                    if !route.visits.isEmpty { found.append("\(route.name) has work after their day is over") }
                    continue
                }
                hours = DateInterval(start: from, end: hours.end)
            }
            var previous: Visit?
            for visit in route.visits {
                guard let task = tasks[visit.taskID] else { continue }
                let name = "\(route.name): task \(task.id)"
                if visit.arrives < hours.start.addingTimeInterval(-tolerance) { found.append("\(name) is reached before their hours") }
                if visit.ends > hours.end.addingTimeInterval(tolerance) { found.append("\(name) ends after their hours") }
                if visit.starts < visit.arrives.addingTimeInterval(-tolerance) { found.append("\(name) starts before they arrive") }
                if let window = task.window,
                    visit.starts < window.start.addingTimeInterval(-tolerance) || visit.starts > window.end.addingTimeInterval(tolerance)
                {
                    found.append("\(name) starts outside its window")
                }
                if let due = task.dueAt, visit.ends > due.addingTimeInterval(tolerance) { found.append("\(name) ends after it is due") }
                if abs(visit.ends.timeIntervalSince(visit.starts) - request.minutesOnSite(task) * 60) > tolerance {
                    found.append("\(name) does not take its minutes on site")
                }
                if !Set(task.requiredSkills).isSubset(of: member.person.skills) { found.append("\(name) needs skills they lack") }
                if task.status == .inProgress || task.pinned, let owner = task.assigneeID, owner != route.personID {
                    found.append("\(name) is held by person \(owner) and may not move")
                }
                if let previous, previous.ends > visit.arrives.addingTimeInterval(tolerance) {
                    found.append("\(name) is reached before task \(previous.taskID) is done")
                }
                previous = visit
            }
        }
        return found
    }
}
