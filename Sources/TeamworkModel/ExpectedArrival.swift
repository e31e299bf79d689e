import Foundation

/// When a worker is expected at a task (its ETA), and whether they are running late: one rule for
/// the board's cards, the task page, `task show`, the worker's `tasks` and `--json`.
///
/// The day planner writes the planned start (`tasks.planned_start`). Until work starts, the
/// expected start is that time, or now once that time has passed (the worker is not there yet).
/// Started or closed work has no ETA. A task runs late when it is expected after the time it
/// becomes late (its window's end or due time, whichever is first).
public struct ExpectedArrival: Sendable, Equatable {
    public var at: Date
    public var runningLate: Bool

    public init?(planned: Date?, status: TaskStatus, due: Date?, window: TimeWindow?, now: Date) {
        guard let planned, status == .open || status == .assigned else { return nil }
        let expected = max(planned, now)
        at = expected
        runningLate = Self.lateFrom(due: due, window: window).map { expected > $0 } ?? false
    }

    /// When work still to do becomes late: its due time or its window's end, whichever comes first
    /// (SQL: `teamwork_late_from`).
    public static func lateFrom(due: Date?, window: TimeWindow?) -> Date? { [due, window?.end].compactMap { $0 }.min() }
}

extension FieldTask {
    /// The ETA at `now` (see ``ExpectedArrival``).
    public func expectedArrival(at now: Date) -> ExpectedArrival? {
        ExpectedArrival(planned: plannedStart, status: status, due: dueAt, window: window, now: now)
    }
}
