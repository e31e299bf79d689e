import Foundation

/// A task on the master list: a job at a location, due by a date, for a team,
/// a member of a team, or one person.
public struct FieldTask: Sendable, Codable, Equatable, Identifiable {
    public var id: Int64
    public var title: String
    public var description: String
    public var priority: Priority
    public var status: TaskStatus
    public var teamID: Int64?
    public var assigneeID: Int64?
    public var locationID: Int64?
    public var dueAt: Date?
    public var createdBy: Int64?
    public var createdAt: Date
    public var updatedAt: Date
    public var startedAt: Date?
    public var completedAt: Date?
    public var completedBy: Int64?
    public var completionNote: String?
    /// Goes up by one on every change; an update that names an older version is a conflict.
    public var version: Int
    /// Skills whoever does it must have (see ``Skills``), sorted.
    public var requiredSkills: [String]
    /// The appointment window, besides the due date.
    public var window: TimeWindow?
    /// The IANA zone its times are read in: its location's, else its team's (kept by the master).
    public var timeZone: String
    /// The zone its times are read in (see ``Zone/reading(_:)``).
    public var zone: Zone { Zone.reading(timeZone) }
    /// The plan that made it, and the plan's day it stands for (``Plan``); nil for a task made by hand.
    public var planID: Int64?
    public var planDate: LocalDate?
    /// The checklist version it carries (it keeps the one it got), and the latest answer to each item.
    public var checklist: ChecklistForm?
    public var answers: [String: ChecklistAnswer]
    /// Minutes on site it takes; nil: its team's default.
    public var durationMinutes: Int?
    /// The day planner leaves pinned work with whoever has it.
    public var pinned: Bool
    /// When the day planner expects work to start (see ``ExpectedArrival``).
    public var plannedStart: Date?
    /// The customer it names (``Customer``); nil: its site's, if any. Never on the workers' devices.
    public var customerID: Int64?
    /// The customer's first name and how their booked visit stands (`none`, `confirmed`, `move`,
    /// `cancel`), as a device may know them; derived on the master (TaskSchema).
    public var customerFirstName: String?
    public var visit: String?
    /// The customer's or the office's reference for the job (a work order or purchase order number), as a
    /// manager set it: the worker sees it, to quote it on the paperwork.
    public var reference: String?

    public init(
        id: Int64, title: String, description: String, priority: Priority, status: TaskStatus,
        teamID: Int64?, assigneeID: Int64?, locationID: Int64?, dueAt: Date?,
        createdBy: Int64?, createdAt: Date, updatedAt: Date,
        startedAt: Date?, completedAt: Date?, completedBy: Int64?, completionNote: String?, version: Int,
        requiredSkills: [String] = [], window: TimeWindow? = nil, timeZone: String = "UTC",
        planID: Int64? = nil, planDate: LocalDate? = nil, checklist: ChecklistForm? = nil,
        answers: [String: ChecklistAnswer] = [:], durationMinutes: Int? = nil, pinned: Bool = false, plannedStart: Date? = nil,
        customerID: Int64? = nil, customerFirstName: String? = nil, visit: String? = nil
    ) {
        self.customerFirstName = customerFirstName
        self.visit = visit
        self.customerID = customerID
        self.durationMinutes = durationMinutes
        self.pinned = pinned
        self.plannedStart = plannedStart
        self.checklist = checklist
        self.answers = answers
        self.timeZone = timeZone
        self.planID = planID
        self.planDate = planDate
        self.id = id
        self.title = title
        self.description = description
        self.priority = priority
        self.status = status
        self.teamID = teamID
        self.assigneeID = assigneeID
        self.locationID = locationID
        self.dueAt = dueAt
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.startedAt = startedAt
        self.completedAt = completedAt
        self.completedBy = completedBy
        self.completionNote = completionNote
        self.version = version
        self.requiredSkills = requiredSkills
        self.window = window
    }

    /// Due before `now` and still needing work.
    public func isOverdue(at now: Date) -> Bool {
        guard let dueAt, !status.isClosed else { return false }
        return dueAt < now
    }

    /// Its appointment window ended before `now` and it still needs work.
    public func isPastWindow(at now: Date) -> Bool {
        guard let window, !status.isClosed else { return false }
        return window.end < now
    }

    /// Overdue or past its window: what the lists flag with `!`.
    public func isLate(at now: Date) -> Bool { isOverdue(at: now) || isPastWindow(at: now) }

    /// When it becomes late if still to be done: its due time or its window's end, whichever
    /// comes first (SQL: `teamwork_late_from`).
    public var lateFrom: Date? { ExpectedArrival.lateFrom(due: dueAt, window: window) }

    /// Its minutes on site: its own, else its team's (`team`), else a new team's.
    public func minutesOnSite(team: Team?) -> Double { Double(durationMinutes ?? team?.taskMinutes ?? Team.defaultTaskMinutes) }

    /// Of one person's tasks, those still to be done that cannot all be kept (``clash(_:_:minutes:)``):
    /// a double booking. `minutes` is each task's minutes on site (its own, else its team's).
    public static func doubleBooked(_ tasks: [FieldTask], minutes: (FieldTask) -> Double) -> Set<Int64> {
        let open = tasks.filter { !$0.status.isClosed && ($0.window != nil || $0.plannedStart != nil) }
        var booked = Set<Int64>()
        for (index, task) in open.enumerated() {
            for other in open[(index + 1)...] where clash(task, other, minutes: minutes) {
                booked.insert(task.id)
                booked.insert(other.id)
            }
        }
        return booked
    }

    /// Whether one person cannot keep both: two planned visits that overlap (each from its expected
    /// start for its minutes on site); two windows of work not yet planned that overlap; or a planned
    /// visit that leaves no room in an unplanned one's window for its minutes. Touching is not overlapping.
    /// (Windows that overlap but were planned one after the other are no double booking.)
    public static func clash(_ a: FieldTask, _ b: FieldTask, minutes: (FieldTask) -> Double) -> Bool {
        func visit(_ task: FieldTask) -> DateInterval? {
            task.plannedStart.map { DateInterval(start: $0, duration: max(0, minutes(task)) * 60) }
        }
        switch (visit(a), visit(b)) {
        case (let x?, let y?):
            return x.start < y.end && y.start < x.end
        case (let planned?, nil):
            return b.window.map { fits(minutes(b), in: $0, around: planned) == false } ?? false
        case (nil, let planned?):
            return a.window.map { fits(minutes(a), in: $0, around: planned) == false } ?? false
        case (nil, nil):
            guard let x = a.window, let y = b.window else { return false }
            return x.start < y.end && y.start < x.end
        }
    }

    /// Whether `minutes` of work fit around `visit` with their start in `window` (a window is when
    /// work starts): done before the visit, or begun after it within the window (nil: they do not
    /// overlap at all).
    static func fits(_ minutes: Double, in window: TimeWindow, around visit: DateInterval) -> Bool? {
        guard visit.start < window.end, window.start < visit.end else { return nil }
        return visit.start.timeIntervalSince(window.start) >= minutes * 60 || visit.end < window.end
    }

    /// Whole minutes it is late at `now` (0 when it is not late).
    public func minutesLate(at now: Date) -> Int {
        guard isLate(at: now), let from = lateFrom else { return 0 }
        return max(0, Int(now.timeIntervalSince(from) / 60))
    }
}

/// Who a task is for: a team (free-floating), a member of a team, or a single person.
public struct Assignment: Sendable, Equatable {
    public var teamID: Int64?
    public var assigneeID: Int64?

    public init(teamID: Int64?, assigneeID: Int64?) throws {
        guard teamID != nil || assigneeID != nil else {
            throw TeamworkError.invalid("a task needs a team, an assignee, or both")
        }
        self.teamID = teamID
        self.assigneeID = assigneeID
    }
}

/// The fields of a task to create, validated on construction.
public struct NewTask: Sendable, Equatable {
    public var title: String
    public var description: String
    public var priority: Priority
    public var assignment: Assignment
    public var locationID: Int64?
    public var dueAt: Date?
    public var requiredSkills: [String]
    public var window: TimeWindow?
    /// The checklist it carries, by name: its latest version when the task is made.
    public var checklist: String?
    /// Minutes on site; nil: its team's default.
    public var durationMinutes: Int?
    /// Its own customer; nil: its site's.
    public var customerID: Int64?
    /// What it has in the columns a manager sets by their key (``TaskColumn/manager``).
    public var declared = DeclaredValues()

    public init(
        title: String, description: String = "", priority: Priority = .normal,
        assignment: Assignment, locationID: Int64? = nil, dueAt: Date? = nil,
        requiredSkills: [String] = [], window: TimeWindow? = nil, checklist: String? = nil, durationMinutes: Int? = nil,
        customerID: Int64? = nil
    ) throws {
        self.customerID = customerID
        self.durationMinutes = try durationMinutes.map(Validate.durationMinutes)
        self.checklist = checklist
        self.title = try Validate.name(title, field: "title")
        self.description = description
        self.priority = priority
        self.assignment = assignment
        self.locationID = locationID
        self.dueAt = dueAt
        self.requiredSkills = requiredSkills
        self.window = window
    }
}

/// Manager edits to a task; `nil` leaves a field as it is.
public struct TaskChanges: Sendable, Equatable {
    public var title: String?
    public var description: String?
    public var priority: Priority?
    /// `.some(nil)` clears the location.
    public var locationID: Int64??
    /// `.some(nil)` clears the due date.
    public var dueAt: Date??
    /// Replaces the required skills.
    public var requiredSkills: [String]?
    /// `.some(nil)` clears the window.
    public var window: TimeWindow??
    /// A checklist by name (its latest version), `.some(nil)` none; a different one starts the answers anew.
    public var checklist: String??
    /// Minutes on site, `.some(nil)` its team's default.
    public var durationMinutes: Int??
    /// Whether the day planner must leave it with whoever has it.
    public var pinned: Bool?
    /// Its own customer, `.some(nil)` its site's.
    public var customerID: Int64??
    /// The columns a manager sets by their key (``TaskColumn/manager``) that change; a cleared one is absent after.
    public var declared = DeclaredValues()

    public init(
        title: String? = nil, description: String? = nil, priority: Priority? = nil,
        locationID: Int64?? = nil, dueAt: Date?? = nil, requiredSkills: [String]? = nil, window: TimeWindow?? = nil,
        checklist: String?? = nil, durationMinutes: Int?? = nil, pinned: Bool? = nil, customerID: Int64?? = nil
    ) throws {
        self.customerID = customerID
        if case .some(.some(let minutes)) = durationMinutes { _ = try Validate.durationMinutes(minutes) }
        self.durationMinutes = durationMinutes
        self.pinned = pinned
        self.checklist = checklist
        self.title = try title.map { try Validate.name($0, field: "title") }
        self.description = description
        self.priority = priority
        self.locationID = locationID
        self.dueAt = dueAt
        self.requiredSkills = requiredSkills
        self.window = window
    }

    public var isEmpty: Bool {
        title == nil && description == nil && priority == nil && locationID == nil && dueAt == nil
            && requiredSkills == nil && window == nil && checklist == nil && durationMinutes == nil && pinned == nil
            && customerID == nil && declared.isEmpty
    }
}

/// Which tasks to list. Every set field narrows the list.
public struct TaskFilter: Sendable, Equatable {
    public var teamID: Int64?
    public var assigneeID: Int64?
    public var statuses: [TaskStatus]
    public var priorities: [Priority]
    public var dueBefore: Date?
    public var dueAfter: Date?
    /// Only tasks past their due date that are neither completed nor cancelled.
    public var overdueAt: Date?
    /// Only tasks whose window, or (without a window) due date, falls on this day in the task's own zone: a day's work.
    public var on: LocalDate?
    /// Only tasks whose id is this text, or whose title, description, site (name or address) or
    /// assignee's name holds it (any case; at most ``maximumSearchLength`` characters).
    public var search: String?
    /// Only tasks that need this skill.
    public var skill: String?
    public var limit: Int?

    public static let maximumSearchLength = 200

    public init(
        teamID: Int64? = nil, assigneeID: Int64? = nil, statuses: [TaskStatus] = [], priorities: [Priority] = [],
        dueBefore: Date? = nil, dueAfter: Date? = nil, overdueAt: Date? = nil, on: LocalDate? = nil, search: String? = nil,
        skill: String? = nil, limit: Int? = nil
    ) {
        self.search = search
        self.skill = skill
        self.teamID = teamID
        self.assigneeID = assigneeID
        self.statuses = statuses
        self.priorities = priorities
        self.dueBefore = dueBefore
        self.dueAfter = dueAfter
        self.overdueAt = overdueAt
        self.on = on
        self.limit = limit
    }
}

extension FieldTask {
    /// A checklist form from its JSON (as the master and the replicas hold it); nil for none.
    public static func checklist(json: String?) throws -> ChecklistForm? {
        guard let json, !json.isEmpty else { return nil }
        return try JSONDecoder().decode(ChecklistForm.self, from: Data(json.utf8))
    }

    /// Answers from their JSON (`{"key": {"value", "by", "at"}}`); empty for none.
    public static func answers(json: String?) throws -> [String: ChecklistAnswer] {
        // Most tasks have none: "{}" is not worth a decoder (it was a thirtieth of the board's time).
        guard let json, !json.isEmpty, json != "{}" else { return [:] }
        return try JSONDecoder().decode([String: ChecklistAnswer].self, from: Data(json.utf8))
    }

    /// JSON text of `value`, keys sorted (what the replicas and devices store).
    public static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }
}
