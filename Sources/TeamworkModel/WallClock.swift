import Foundation

/// What time it is for decisions made by the wall clock (a reminder "from 09:00 the day before", a
/// visit that is over): the system's time, or a clock an operator or a test sets to start at a given
/// instant and run on from there (`teamwork-service run --clock`), so a day can be rehearsed and
/// a test never depends on the hour it happens to run at. Timers and deadlines never use it.
public struct WallClock: Sendable {
    /// Seconds added to the system's time.
    public let offset: TimeInterval

    public static let system = WallClock(offset: 0)

    init(offset: TimeInterval) { self.offset = offset }

    /// A clock that reads `start` now and runs on at the system clock's pace.
    public init(startingAt start: Date) { offset = start.timeIntervalSinceNow }

    public func now() -> Date { Date().addingTimeInterval(offset) }
}
