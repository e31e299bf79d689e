import Foundation

/// A day on a wall calendar, `2026-12-01`, in no zone of its own.
public struct LocalDate: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public var year: Int
    public var month: Int
    public var day: Int

    /// A real day of the Gregorian calendar, years 1…9999.
    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month),
            (1...LocalDate.days(inMonth: month, of: year)).contains(day)
        else { return nil }
        (self.year, self.month, self.day) = (year, month, day)
    }

    /// `2026-12-01`; a one-line error naming `field` otherwise.
    public init(parsing text: String, field: String = "date") throws {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.utf8.allSatisfy { (48...57).contains($0) } }),
            let date = LocalDate(year: Int(parts[0])!, month: Int(parts[1])!, day: Int(parts[2])!)
        else {
            throw TeamworkError.invalid("\(field) must be a day like 2026-12-01")
        }
        self = date
    }

    public var description: String {
        String(format: "%04d-%02d-%02d", year, month, day)
    }

    public static func < (a: LocalDate, b: LocalDate) -> Bool {
        (a.year, a.month, a.day) < (b.year, b.month, b.day)
    }

    public init(from decoder: any Decoder) throws {
        self = try LocalDate(parsing: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    public static func isLeap(_ year: Int) -> Bool { (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 }

    public static func days(inMonth month: Int, of year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 (negative before): the day's number, for arithmetic.
    public var dayNumber: Int {
        // Howard Hinnant's days_from_civil.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The day with number `number` (see ``dayNumber``).
    public init(dayNumber number: Int) {
        let z = number + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        (self.year, self.month, self.day) = (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    public func adding(days: Int) -> LocalDate { LocalDate(dayNumber: dayNumber + days) }

    /// `Monday` … `Sunday`, in English.
    public var weekdayName: String {
        ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"][weekday - 1]
    }

    /// 1 = Monday … 7 = Sunday (ISO 8601).
    public var weekday: Int {
        // 1970-01-01 was a Thursday (4).
        ((dayNumber % 7 + 7) % 7 + 3) % 7 + 1
    }
}

/// A time of day on a wall clock, `08:00`.
public struct LocalTime: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public var hour: Int
    public var minute: Int
    public var second: Int

    public init?(hour: Int, minute: Int, second: Int = 0) {
        guard (0...23).contains(hour), (0...59).contains(minute), (0...59).contains(second) else { return nil }
        (self.hour, self.minute, self.second) = (hour, minute, second)
    }

    /// `08:00` or `08:00:30`.
    public init(parsing text: String, field: String = "time") throws {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(parts.count), parts.allSatisfy({ $0.count == 2 && $0.utf8.allSatisfy { (48...57).contains($0) } }),
            let time = LocalTime(hour: Int(parts[0])!, minute: Int(parts[1])!, second: parts.count == 3 ? Int(parts[2])! : 0)
        else {
            throw TeamworkError.invalid("\(field) must be a time of day like 08:00")
        }
        self = time
    }

    public var seconds: Int { hour * 3600 + minute * 60 + second }

    public var description: String {
        second == 0 ? String(format: "%02d:%02d", hour, minute) : String(format: "%02d:%02d:%02d", hour, minute, second)
    }

    public static func < (a: LocalTime, b: LocalTime) -> Bool { a.seconds < b.seconds }

    public init(from decoder: any Decoder) throws {
        self = try LocalTime(parsing: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// An IANA time zone (`Europe/Stockholm`), and the one rule that turns a wall
/// clock there into an instant: a local time that does not exist (the hour
/// skipped when clocks go forward) moves forward to the first that does (the
/// moment of the change); an ambiguous one (the hour repeated when clocks go
/// back) is the earlier of its two instants. docs/dispatch.md says the same.
public struct Zone: Sendable, Hashable, CustomStringConvertible {
    public let timeZone: TimeZone
    /// The IANA name, as given (Foundation on Linux calls UTC "GMT").
    public let name: String
    public var description: String { name }

    public static let utc = Zone(checked: TimeZone(identifier: "UTC")!, name: "UTC")
    /// Where the system's tz database is (`TZDIR`, else Debian's `/usr/share/zoneinfo`).
    static let database = ProcessInfo.processInfo.environment["TZDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/share/zoneinfo"

    /// Whether the tz database has a zone of this name (aliases included): a path of name-like
    /// parts to a compiled zone file (`TZif`). Foundation's own list is ICU's, which lacks
    /// current canonical names such as `Asia/Kolkata`.
    static func inDatabase(_ name: String) -> Bool {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard !parts.isEmpty, !notZones.contains(name), !["posix", "right"].contains(String(parts[0])),
            parts.allSatisfy({ part in
                !part.isEmpty && part.first != "." && part.utf8.allSatisfy { $0.isASCIILetterOrDigit || "_+-.".utf8.contains($0) }
            })
        else { return false }
        // A link must stay inside the database (Debian's `localtime` points at /etc/localtime: the host's zone, not a name).
        let path = URL(fileURLWithPath: database + "/" + name).resolvingSymlinksInPath().path
        let root = URL(fileURLWithPath: database).resolvingSymlinksInPath().path
        guard path.hasPrefix(root + "/"), let file = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? file.close() }
        return (try? file.read(upToCount: 4)) == Data("TZif".utf8)
    }

    /// Files of the tz database that are not zones people mean (PostgreSQL refuses them too).
    private static let notZones: Set<String> = ["localtime", "posixrules", "Factory"]

    private init(checked timeZone: TimeZone, name: String) {
        self.timeZone = timeZone
        self.name = name
    }

    /// The zone a stored name (a task's, a plan's) is read in: UTC should this machine's tz
    /// database lack it (the database checked it when it was set). Input from people goes
    /// through ``init(_:field:)`` instead, which refuses an unknown name.
    public static func reading(_ name: String) -> Zone { (try? Zone(name)) ?? .utc }

    /// A zone by its IANA name; a one-line error naming `field` when the system's tz database does not know it.
    public init(_ name: String, field: String = "time zone") throws {
        if let known = Self.known.value[name] {
            self = known
            return
        }
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        guard trimmed.utf8.count <= 64, trimmed == "UTC" || Self.inDatabase(trimmed),
            let zone = TimeZone(identifier: trimmed)
        else {
            throw TeamworkError.invalid("\(field) must be an IANA time zone name like Europe/Stockholm or UTC (is tzdata installed?)")
        }
        self.timeZone = zone
        self.name = trimmed
        if trimmed == name { Self.known.mutate { if $0.count < Self.mostKnown { $0[name] = self } } }
    }

    /// The zones found in the tz database, by name as given: a name is looked for there once per
    /// process, not for every task a page shows (the look, links resolved and the file opened, was
    /// a sixth of the board's time). Only names found, exactly as written, are kept, so what it
    /// holds is bounded by the database (and by ``mostKnown`` where a file system that ignores case
    /// finds every spelling of a name). A zone the database drops in an upgrade of tzdata stays
    /// known, with its old rules, until the process restarts.
    private static let known = Locked<[String: Zone]>([:])
    /// The most zones ``known`` holds: Debian's tz database has about 600 names and their links.
    static let mostKnown = 4_096

    /// The day `instant` falls on, on a wall calendar in this zone.
    public func date(of instant: Date) -> LocalDate {
        let offset = timeZone.secondsFromGMT(for: instant)
        let seconds = Int(floor(instant.timeIntervalSince1970)) + offset
        return LocalDate(dayNumber: Int(floor(Double(seconds) / 86_400)))
    }

    /// The wall-clock time of `instant` in this zone.
    public func time(of instant: Date) -> LocalTime {
        let seconds = Int(floor(instant.timeIntervalSince1970)) + timeZone.secondsFromGMT(for: instant)
        let ofDay = ((seconds % 86_400) + 86_400) % 86_400
        return LocalTime(hour: ofDay / 3600, minute: ofDay % 3600 / 60, second: ofDay % 60)!
    }

    /// The instant of `time` on `date` in this zone, by the rule above.
    public func instant(_ date: LocalDate, _ time: LocalTime) -> Date {
        let wall = Double(date.dayNumber * 86_400 + time.seconds)
        // The offsets in force a day either side hold every candidate (zones change at most once a day).
        let offsets = Set([
            timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: wall - 86_400)),
            timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: wall + 86_400)),
            timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: wall)),
        ])
        let matching = offsets.map { Date(timeIntervalSince1970: wall - Double($0)) }
            .filter { Double(timeZone.secondsFromGMT(for: $0)) == wall - $0.timeIntervalSince1970 }
        if let earliest = matching.min() { return earliest }
        // In a gap: the first instant after it, the moment clocks went forward.
        let before = Date(timeIntervalSince1970: wall - Double(offsets.max()!))
        return timeZone.nextDaylightSavingTimeTransition(after: before.addingTimeInterval(-86_400))
            .flatMap { $0 <= before.addingTimeInterval(86_400) ? $0 : nil }
            ?? Date(timeIntervalSince1970: wall - Double(offsets.min()!))
    }

    /// The whole of `date` here: from its first instant to the next day's (23 or 25 hours on a changing day).
    public func day(_ date: LocalDate) -> DateInterval {
        let start = instant(date, LocalTime(hour: 0, minute: 0)!)
        return DateInterval(start: start, end: instant(date.adding(days: 1), LocalTime(hour: 0, minute: 0)!))
    }

    /// The last second of `date` here: a due date's instant.
    public func endOfDay(_ date: LocalDate) -> Date {
        day(date).end.addingTimeInterval(-1)
    }

    /// The zone's abbreviation at `instant` (`CET`, `CEST`, `PST`; `UTC`) from the system's tz
    /// database (Foundation on Linux gives only `GMT+1`), else its offset as `+01:00`.
    public func abbreviation(at instant: Date) -> String {
        if name == "UTC" { return "UTC" }
        let offset = timeZone.secondsFromGMT(for: instant)
        let daylight = timeZone.isDaylightSavingTime(for: instant)
        if let found = Self.abbreviations(name).last(where: { $0.offset == offset && $0.daylight == daylight }),
            found.name.first?.isLetter == true
        {
            return found.name
        }
        return String(format: "%@%02d:%02d", offset < 0 ? "-" : "+", abs(offset) / 3600, abs(offset) % 3600 / 60)
    }

    struct Abbreviation: Sendable {
        var offset: Int
        var daylight: Bool
        var name: String
    }
    private static let abbreviationCache = Locked([String: [Abbreviation]]())

    /// The local time types of a zone's TZif file (RFC 8536), in the file's order (latest rules last).
    static func abbreviations(_ name: String) -> [Abbreviation] {
        if let known = abbreviationCache.value[name] { return known }
        var found: [Abbreviation] = []
        if !name.contains(".."), let data = FileManager.default.contents(atPath: "/usr/share/zoneinfo/" + name) {
            found = parseTZif([UInt8](data))
        }
        abbreviationCache.mutate { $0[name] = found }
        return found
    }

    static func parseTZif(_ bytes: [UInt8]) -> [Abbreviation] {
        func count(_ at: Int) -> Int {
            guard at + 4 <= bytes.count else { return 0 }
            return Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
        }
        guard bytes.count >= 44, bytes[0...3] == [0x54, 0x5A, 0x69, 0x66] else { return [] }
        // Version 1 block: skip to the 64-bit block when there is one (same types either way).
        var header = 0
        let (isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt) = (count(20), count(24), count(28), count(32), count(36), count(40))
        if bytes[4] >= 0x32 {
            header = 44 + timecnt * 5 + typecnt * 6 + charcnt + leapcnt * 8 + isstdcnt + isutcnt
        }
        let (timecount, typecount, charcount) = (count(header + 32), count(header + 36), count(header + 40))
        let timeSize = header == 0 ? 4 : 8
        let types = header + 44 + timecount * timeSize + timecount
        let characters = types + typecount * 6
        guard characters + charcount <= bytes.count else { return [] }
        let indices = bytes[(header + 44 + timecount * timeSize)..<types]
        func type(_ index: Int) -> Abbreviation? {
            let at = types + index * 6
            guard index < typecount else { return nil }
            let offset = Int(Int32(bitPattern: UInt32(count(at))))
            var end = characters + Int(bytes[at + 5])
            let start = end
            while end < characters + charcount, bytes[end] != 0 { end += 1 }
            return Abbreviation(
                offset: offset, daylight: bytes[at + 4] != 0,
                name: String(decoding: bytes[start..<end], as: UTF8.self))
        }
        // Types in the order the transitions use them, so the latest use of an offset comes last.
        var ordered = (0..<typecount).compactMap(type)
        ordered += indices.compactMap { type(Int($0)) }
        return ordered
    }

    /// `2026-12-01 09:00 CET`: an instant as a person here reads it.
    public func format(_ instant: Date, withZone: Bool = true) -> String {
        let text = "\(date(of: instant)) \(time(of: instant))"
        return withZone ? "\(text) \(abbreviation(at: instant))" : text
    }
}

extension UInt8 {
    fileprivate var isASCIILetterOrDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self)
    }
}
