import Foundation

/// Skills: what people can do and what tasks require. A skill is a short
/// lowercase word (`electrical`, `high-voltage`); the database checks the same
/// rule (`teamwork_skills_valid`, migration 0013).
public enum Skills {
    /// Most skills a person may have.
    public static let mostPerPerson = 32
    /// Most skills a task may require.
    public static let mostPerTask = 8

    /// `electrical, Climbing` → `["climbing", "electrical"]`: separated by commas
    /// (or semicolons), trimmed, lowercased, each once, sorted. An empty text is no skills.
    public static func parse(_ text: String, most: Int, field: String) throws -> [String] {
        let words = text.split(whereSeparator: { $0 == "," || $0 == ";" }).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        var skills: Set<String> = []
        for word in words where !word.isEmpty {
            let allowed = word.utf8.allSatisfy { (97...122).contains($0) || (48...57).contains($0) || $0 == 45 }
            guard allowed, word.utf8.count <= 32, word.first != "-", word.last != "-" else {
                throw TeamworkError.invalid(
                    "\(field): a skill is 1 to 32 of a-z, 0-9 and '-', not starting or ending with '-'"
                )
            }
            skills.insert(word)
        }
        guard skills.count <= most else { throw TeamworkError.invalid("\(field): at most \(most) skills") }
        return skills.sorted()
    }

    /// The skills of `required` that `has` lacks, sorted.
    public static func missing(_ required: [String], from has: [String]) -> [String] {
        let owned = Set(has)
        return required.filter { !owned.contains($0) }.sorted()
    }
}

/// An appointment window: when the customer expects the worker, besides the
/// task's due date. Written as an ISO 8601 interval, `start/end`
/// (`2026-12-01T09:00Z/2026-12-01T12:00Z`); the end may also be a duration
/// (`2026-12-01T09:00Z/PT3H`).
public struct TimeWindow: Sendable, Codable, Equatable, Hashable {
    public var start: Date
    public var end: Date

    /// Longest window accepted (the database checks the same).
    public static let longest: TimeInterval = 31 * 24 * 3600

    public init(start: Date, end: Date) throws {
        guard start < end else { throw TeamworkError.invalid("window: the start must be before the end") }
        guard end.timeIntervalSince(start) <= Self.longest else {
            throw TeamworkError.invalid("window: at most 31 days long")
        }
        self.start = start
        self.end = end
    }

    /// Ends without an offset are wall clocks in `zone` (see ``ISODate/parse(_:field:in:)``).
    public static func parse(_ text: String, field: String = "window", in zone: Zone = .utc) throws -> TimeWindow {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else {
            throw TeamworkError.invalid("\(field) must be an ISO 8601 interval like 2026-12-01T09:00Z/2026-12-01T12:00Z")
        }
        let start = try ISODate.parse(String(parts[0]), field: "\(field) start", in: zone)
        let end: Date
        if parts[1].hasPrefix("PT") || parts[1].hasPrefix("P") {
            end = start.addingTimeInterval(try duration(String(parts[1]), field: field))
        } else {
            end = try ISODate.parse(String(parts[1]), field: "\(field) end", in: zone)
        }
        return try TimeWindow(start: start, end: end)
    }

    /// `PT3H`, `PT90M`, `PT2H30M`, `P1D`, `P1DT4H`: days, hours, minutes, seconds.
    static func duration(_ text: String, field: String) throws -> TimeInterval {
        var seconds: TimeInterval = 0
        var number = ""
        var inTime = false
        var sawUnit = false
        for c in text.dropFirst() {
            if c.isASCII, c.isNumber {
                number.append(c)
                continue
            }
            if c == "T" {
                inTime = true
                continue
            }
            guard let value = Double(number) else { throw bad() }
            switch (c, inTime) {
            case ("D", false): seconds += value * 86400
            case ("H", true): seconds += value * 3600
            case ("M", true): seconds += value * 60
            case ("S", true): seconds += value
            default: throw bad()
            }
            number = ""
            sawUnit = true
        }
        guard sawUnit, number.isEmpty else { throw bad() }
        return seconds
        func bad() -> TeamworkError {
            TeamworkError.invalid("\(field): the duration must look like PT3H, PT90M or P1D")
        }
    }

    /// `2026-12-01T09:00:00Z/2026-12-01T12:00:00Z`.
    public var description: String { "\(ISODate.format(start))/\(ISODate.format(end))" }

    /// For tables, on the wall clock of `zone`: `2026-12-01 09:00-12:00 CET` within one day, else both ends in full.
    public func compact(in zone: Zone = .utc, withZone: Bool = true) -> String {
        let (startDay, endDay) = (zone.date(of: start), zone.date(of: end))
        let abbreviation = withZone ? " " + zone.abbreviation(at: start) : ""
        guard startDay == endDay || (zone.time(of: end).seconds == 0 && endDay == startDay.adding(days: 1)) else {
            return "\(zone.format(start, withZone: false))-\(zone.format(end, withZone: false))\(abbreviation)"
        }
        let endTime = zone.time(of: end).seconds == 0 && endDay != startDay ? "24:00" : zone.time(of: end).description
        return "\(startDay) \(zone.time(of: start))-\(endTime)\(abbreviation)"
    }

    /// Whether a task with this window (else this due date) is part of `day`'s work on the wall
    /// clock of `zone`: its window shares time with that day, or without a window its due date
    /// falls in it. The manager's `task list --on` asks PostgreSQL the same (CentralStore.listTasks).
    public static func falls(on day: LocalDate, due: Date?, window: TimeWindow?, in zone: Zone) -> Bool {
        let whole = zone.day(day)
        if let window { return window.overlaps(from: whole.start, to: whole.end) }
        guard let due else { return false }
        return whole.start <= due && due < whole.end
    }

    /// Shares some time with `[from, to)`.
    public func overlaps(from: Date, to: Date) -> Bool { start < to && from < end }
}

/// Distances on the earth, for choosing who goes.
public enum GreatCircle {
    /// The mean earth radius in meters (IUGG).
    public static let earthRadius = 6_371_008.8

    /// The great-circle distance in meters between two points (haversine).
    public static func meters(
        fromLatitude lat1: Double, longitude lon1: Double,
        toLatitude lat2: Double, longitude lon2: Double
    ) -> Double {
        let rad = Double.pi / 180
        let dLat = (lat2 - lat1) * rad
        let dLon = (lon2 - lon1) * rad
        let a = sin(dLat / 2) * sin(dLat / 2) + cos(lat1 * rad) * cos(lat2 * rad) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * earthRadius * asin(min(1, sqrt(a)))
    }
}
