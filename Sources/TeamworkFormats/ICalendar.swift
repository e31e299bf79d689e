import Foundation
import TeamworkModel

/// iCalendar text (RFC 5545) as Teamwork writes it: CRLF line ends, lines folded at 75 octets,
/// text values escaped, times in UTC. One writer for every calendar Teamwork sends.
public struct ICalendar: Sendable {
    public struct Event: Sendable {
        public var uid: String
        public var sequence: Int
        public var start: Date
        public var end: Date
        public var summary: String
        public var location: String
        public var description: String
        public var status: String
        public var lastModified: Date
        /// Who sends an invitation (METHOD:REQUEST or CANCEL), and to whom: mail addresses.
        public var organizer: (name: String, email: String)?
        public var attendee: (name: String, email: String)?

        public init(
            uid: String, sequence: Int, start: Date, end: Date, summary: String, location: String, description: String,
            status: String = "CONFIRMED", lastModified: Date
        ) {
            self.uid = uid
            self.sequence = sequence
            self.start = start
            self.end = end
            self.summary = summary
            self.location = location
            self.description = description
            self.status = status
            self.lastModified = lastModified
        }
    }

    public var name: String
    public var events: [Event]
    /// PUBLISH (a feed), REQUEST (an invitation) or CANCEL (RFC 5546).
    public var method: String
    /// When set, times are written on this zone's clock (`TZID=`) with its VTIMEZONE; else in UTC.
    public var zone: Zone?

    public init(name: String, events: [Event], method: String = "PUBLISH", zone: Zone? = nil) {
        self.name = name
        self.events = events
        self.method = method
        self.zone = zone.flatMap { $0 == .utc ? nil : $0 }
    }

    /// The calendar as text, stamped `now`.
    public func text(now: Date = Date()) -> String {
        var lines = [
            "BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//Teamwork//Field work//EN", "CALSCALE:GREGORIAN", "METHOD:" + method,
            "X-WR-CALNAME:" + Self.escape(name),
        ]
        if let zone, let first = events.map(\.start).min(), let last = events.map(\.end).max() {
            lines += Self.timeZone(zone, from: first, to: last)
        }
        func time(_ name: String, _ date: Date) -> String {
            guard let zone else { return name + ":" + Self.utc(date) }
            return name + ";TZID=" + zone.name + ":" + Self.local(date, in: zone)
        }
        for event in events {
            lines += [
                "BEGIN:VEVENT", "UID:" + Self.escape(event.uid), "DTSTAMP:" + Self.utc(now), "SEQUENCE:\(event.sequence)",
                "LAST-MODIFIED:" + Self.utc(event.lastModified), time("DTSTART", event.start), time("DTEND", event.end),
                "SUMMARY:" + Self.escape(event.summary), "STATUS:" + event.status,
            ]
            if let organizer = event.organizer {
                lines.append("ORGANIZER;CN=\"\(Self.parameter(organizer.name))\":mailto:" + organizer.email)
            }
            if let attendee = event.attendee {
                lines.append("ATTENDEE;CN=\"\(Self.parameter(attendee.name))\";ROLE=REQ-PARTICIPANT;RSVP=FALSE:mailto:" + attendee.email)
            }
            if !event.location.isEmpty { lines.append("LOCATION:" + Self.escape(event.location)) }
            if !event.description.isEmpty { lines.append("DESCRIPTION:" + Self.escape(event.description)) }
            lines.append("END:VEVENT")
        }
        lines.append("END:VCALENDAR")
        return lines.map(Self.fold).joined(separator: "\r\n") + "\r\n"
    }

    /// `20261201T100000`: the wall-clock time in `zone`.
    static func local(_ date: Date, in zone: Zone) -> String {
        let (day, time) = (zone.date(of: date), zone.time(of: date))
        return String(format: "%04d%02d%02dT%02d%02d%02d", day.year, day.month, day.day, time.hour, time.minute, time.second)
    }

    /// A quoted parameter value (RFC 5545 3.2): no double quotes or control characters in it.
    static func parameter(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { $0 != "\"" && $0.value >= 0x20 && $0.value != 0x7f }))
    }

    /// The zone's VTIMEZONE: each change of its offset from a year before `from` to a year after
    /// `to` as a STANDARD or DAYLIGHT observance (a zone that never changes: one STANDARD).
    static func timeZone(_ zone: Zone, from: Date, to: Date) -> [String] {
        let tz = zone.timeZone
        let year: TimeInterval = 366 * 86_400
        func offset(_ seconds: Int) -> String {
            let sign = seconds < 0 ? "-" : "+"
            let magnitude = abs(seconds)
            let text = String(format: "%@%02d%02d", sign, magnitude / 3600, magnitude % 3600 / 60)
            return magnitude % 60 == 0 ? text : text + String(format: "%02d", magnitude % 60)
        }
        var lines = ["BEGIN:VTIMEZONE", "TZID:" + zone.name]
        var at = from.addingTimeInterval(-year)
        var previous = tz.secondsFromGMT(for: at)
        var changes = 0
        while let next = tz.nextDaylightSavingTimeTransition(after: at), next < to.addingTimeInterval(year), changes < 8 {
            let after = tz.secondsFromGMT(for: next)
            let kind = tz.isDaylightSavingTime(for: next) ? "DAYLIGHT" : "STANDARD"
            // Its onset as the clock read before it (RFC 5545 3.6.5).
            let onset = Self.local(next.addingTimeInterval(Double(previous)), in: .utc)
            lines += [
                "BEGIN:" + kind, "DTSTART:" + onset, "TZOFFSETFROM:" + offset(previous), "TZOFFSETTO:" + offset(after),
                "TZNAME:" + Self.escape(zone.abbreviation(at: next)), "END:" + kind,
            ]
            (previous, at, changes) = (after, next, changes + 1)
        }
        if changes == 0 {
            lines += [
                "BEGIN:STANDARD", "DTSTART:19700101T000000", "TZOFFSETFROM:" + offset(previous), "TZOFFSETTO:" + offset(previous),
                "TZNAME:" + Self.escape(zone.abbreviation(at: from)), "END:STANDARD",
            ]
        }
        return lines + ["END:VTIMEZONE"]
    }

    /// `20261201T090000Z`.
    public static func utc(_ date: Date) -> String {
        let zone = Zone.utc
        let (day, time) = (zone.date(of: date), zone.time(of: date))
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", day.year, day.month, day.day, time.hour, time.minute, time.second)
    }

    /// A TEXT value: backslash, semicolon, comma and line breaks escaped; other control characters dropped.
    public static func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case ";": out += "\\;"
            case ",": out += "\\,"
            case "\n": out += "\\n"
            case "\r": continue
            default:
                if scalar.value < 0x20 || scalar.value == 0x7f { continue }
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A content line folded at 75 octets (a CRLF and a space before each continuation), never
    /// inside a UTF-8 sequence.
    static func fold(_ line: String) -> String {
        guard line.utf8.count > 75 else { return line }
        var parts: [String] = []
        var current = ""
        var octets = 0
        for character in line {
            let size = String(character).utf8.count
            if octets + size > (parts.isEmpty ? 75 : 74) {
                parts.append(current)
                current = ""
                octets = 0
            }
            current.append(character)
            octets += size
        }
        parts.append(current)
        return parts.joined(separator: "\r\n ")
    }
}

extension ICalendar.Event {
    /// A task as an event: from its planned start (else its window's start, else its due time
    /// less its minutes on site) for its minutes on site (a window without a plan: the window);
    /// its UID is stable for the task and its SEQUENCE is the task's version.
    public init(task: FieldTask, site: Location?, minutesOnSite: Int) {
        let minutes = TimeInterval(task.durationMinutes ?? minutesOnSite) * 60
        let start = task.plannedStart ?? task.window?.start ?? (task.dueAt ?? task.createdAt).addingTimeInterval(-minutes)
        let end = task.plannedStart == nil ? (task.window?.end ?? start.addingTimeInterval(minutes)) : start.addingTimeInterval(minutes)
        let zone = task.zone
        var about = ["Priority: \(task.priority.rawValue)", "Status: \(task.status.rawValue.replacingOccurrences(of: "_", with: " "))"]
        if let window = task.window { about.append("Window: \(window.compact(in: zone))") }
        if let due = task.dueAt { about.append("Due: \(zone.format(due))") }
        if !task.requiredSkills.isEmpty { about.append("Needs: \(task.requiredSkills.joined(separator: ", "))") }
        if !task.description.isEmpty { about.append(task.description) }
        self.init(
            uid: "task-\(task.id)@teamwork", sequence: task.version, start: start, end: max(end, start.addingTimeInterval(60)),
            summary: task.title,
            location: site.map { [$0.name, $0.address.singleLine].filter { !$0.isEmpty }.joined(separator: ", ") } ?? "",
            description: about.joined(separator: "\n"), lastModified: task.updatedAt)
    }
}
