import Foundation

/// Who should go: candidates for one task, best first, each with the reasons.
///
/// The rules, in order:
/// 1. Someone without every required skill is not a candidate (listed in
///    ``Ranking/excluded`` with what they lack).
/// 2. Someone who does not work when the task is to be done (``Availability``: away, a day off,
///    outside their hours) is not a candidate either (listed with why).
/// 3. Someone without a last-known position is counted as
///    ``Ranking/kilometresForUnknownPosition`` away (a crew's usual reach): an idle
///    worker whose phone has not checked in still beats a nearby one who holds a
///    full day. When the task has no location, nobody's distance is known and
///    position does not matter.
/// 4. Within each group, the lowest cost wins. The cost is in kilometres: the
///    great-circle distance from the position to the task, plus
///    ``Ranking/kilometresPerLoad`` for each unit of open workload (an urgent task
///    held counts 2, high 1.5, normal 1, low 0.5) and
///    ``Ranking/kilometresPerClash`` for each task they hold whose window overlaps
///    this task's window. So at equal load the nearer person wins, at equal
///    distance the lighter load wins, and 5 km of road weigh as much as one more
///    normal task.
/// 5. Equal costs: the fresher position first, then the lower person id, so the
///    order is the same on every run.
public struct Ranking: Sendable, Codable, Equatable {
    public static let kilometresPerLoad = 5.0
    public static let kilometresPerClash = 10.0
    public static let kilometresForUnknownPosition = 15.0

    public var taskID: Int64
    public var candidates: [Candidate]
    public var excluded: [Excluded]

    public struct Excluded: Sendable, Codable, Equatable {
        public var personID: Int64
        public var name: String
        public var reason: String
    }

    /// What the ranking knows about one person.
    public struct Input: Sendable, Equatable {
        public var person: Person
        public var position: (latitude: Double, longitude: Double, reportedAt: Date)?
        /// The priorities of the open tasks they hold (assigned or in progress).
        public var openPriorities: [Priority]
        /// How many of those overlap the task's window.
        public var windowClashes: Int
        /// Why they do not work when the task is to be done (``Availability``); nil: they do.
        public var unavailable: String?

        public init(
            person: Person, position: (latitude: Double, longitude: Double, reportedAt: Date)?,
            openPriorities: [Priority], windowClashes: Int, unavailable: String? = nil
        ) {
            self.person = person
            self.position = position
            self.openPriorities = openPriorities
            self.windowClashes = windowClashes
            self.unavailable = unavailable
        }

        public static func == (a: Input, b: Input) -> Bool {
            a.person == b.person && a.position?.latitude == b.position?.latitude
                && a.position?.longitude == b.position?.longitude && a.position?.reportedAt == b.position?.reportedAt
                && a.openPriorities == b.openPriorities && a.windowClashes == b.windowClashes && a.unavailable == b.unavailable
        }
    }

    /// Why nobody is a candidate, for a message; empty when someone is.
    public var noneBecause: String {
        guard candidates.isEmpty else { return "" }
        if excluded.isEmpty { return "no one is in the task's team (or, for a task without a team, no workers exist)" }
        return excluded.map { "\($0.name) \($0.reason)" }.joined(separator: "; ")
    }

    public init(taskID: Int64, candidates: [Candidate], excluded: [Excluded]) {
        self.taskID = taskID
        self.candidates = candidates
        self.excluded = excluded
    }

    /// Ranks `people` for `task`, whose site (if any) is at `site`.
    public init(task: FieldTask, site: (latitude: Double, longitude: Double)?, people: [Input], now: Date) {
        var candidates: [Candidate] = []
        var excluded: [Excluded] = []
        for input in people {
            let missing = Skills.missing(task.requiredSkills, from: input.person.skills)
            if !missing.isEmpty {
                excluded.append(
                    Excluded(
                        personID: input.person.id, name: input.person.displayName,
                        reason: "lacks \(missing.joined(separator: ", "))"))
                continue
            }
            if let unavailable = input.unavailable {
                excluded.append(Excluded(personID: input.person.id, name: input.person.displayName, reason: unavailable))
                continue
            }
            candidates.append(Candidate(input, task: task, site: site, now: now))
        }
        candidates.sort { a, b in
            if a.cost != b.cost { return a.cost < b.cost }
            if a.positionReportedAt != b.positionReportedAt {
                return (a.positionReportedAt ?? .distantPast) > (b.positionReportedAt ?? .distantPast)
            }
            return a.personID < b.personID
        }
        self.init(taskID: task.id, candidates: candidates, excluded: excluded)
    }
}

/// One person who could take the task, and why they rank where they do.
public struct Candidate: Sendable, Codable, Equatable {
    public var personID: Int64
    public var name: String
    public var email: String
    /// From their last-known position to the task's site; nil when either is unknown.
    public var distanceMeters: Double?
    public var positionReportedAt: Date?
    public var openTasks: Int
    public var load: Double
    public var windowClashes: Int
    /// What the ranking sorts by (see ``Ranking``), in kilometres.
    public var cost: Double
    /// "3.2 km away", "2 open tasks (1 urgent)", "has electrical".
    public var reasons: [String]

    public var person: (id: Int64, displayName: String) { (personID, name) }

    public static func weight(_ priority: Priority) -> Double {
        switch priority {
        case .urgent: 2
        case .high: 1.5
        case .normal: 1
        case .low: 0.5
        }
    }

    init(_ input: Ranking.Input, task: FieldTask, site: (latitude: Double, longitude: Double)?, now: Date) {
        personID = input.person.id
        name = input.person.displayName
        email = input.person.email
        positionReportedAt = input.position?.reportedAt
        if let site, let position = input.position {
            distanceMeters = GreatCircle.meters(
                fromLatitude: position.latitude, longitude: position.longitude,
                toLatitude: site.latitude, longitude: site.longitude)
        }
        openTasks = input.openPriorities.count
        load = input.openPriorities.map(Self.weight).reduce(0, +)
        windowClashes = input.windowClashes
        let kilometres = distanceMeters.map { $0 / 1000 } ?? (site == nil ? 0 : Ranking.kilometresForUnknownPosition)
        cost =
            kilometres + load * Ranking.kilometresPerLoad
            + Double(windowClashes) * Ranking.kilometresPerClash

        var reasons: [String] = []
        if let distanceMeters, let reported = positionReportedAt {
            reasons.append("\(Self.kilometres(distanceMeters)) away (position \(Self.age(now.timeIntervalSince(reported))) old)")
        } else if site != nil {
            reasons.append("position unknown (counted as \(Int(Ranking.kilometresForUnknownPosition)) km)")
        }
        let urgent = input.openPriorities.filter { $0 == .urgent }.count
        reasons.append(quantity(openTasks, "open task") + (urgent > 0 ? " (\(urgent) urgent)" : ""))
        if windowClashes > 0 {
            reasons.append("\(windowClashes) in the same window")
        }
        if !task.requiredSkills.isEmpty { reasons.append("has \(task.requiredSkills.joined(separator: ", "))") }
        self.reasons = reasons
    }

    /// `850 m`, `3.2 km`, `41 km`.
    static func kilometres(_ meters: Double) -> String {
        if meters < 1000 { return "\(Int(meters.rounded())) m" }
        let km = meters / 1000
        return km < 10 ? String(format: "%.1f km", km) : "\(Int(km.rounded())) km"
    }

    /// `12 min`, `3 h`, `2 days`.
    static func age(_ seconds: TimeInterval) -> String {
        let s = max(0, seconds)
        if s < 3600 { return "\(Int((s / 60).rounded())) min" }
        if s < 2 * 86400 { return "\(Int((s / 3600).rounded())) h" }
        return "\(Int((s / 86400).rounded())) days"
    }
}
