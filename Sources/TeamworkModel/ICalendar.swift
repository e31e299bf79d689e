import Foundation

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

    public init(name: String, events: [Event]) {
        self.name = name
        self.events = events
    }

    /// The calendar as text, stamped `now`.
    public func text(now: Date = Date()) -> String {
        var lines = [
            "BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//Teamwork//Field work//EN", "CALSCALE:GREGORIAN", "METHOD:PUBLISH",
            "X-WR-CALNAME:" + Self.escape(name),
        ]
        for event in events {
            lines += [
                "BEGIN:VEVENT", "UID:" + Self.escape(event.uid), "DTSTAMP:" + Self.utc(now), "SEQUENCE:\(event.sequence)",
                "LAST-MODIFIED:" + Self.utc(event.lastModified), "DTSTART:" + Self.utc(event.start), "DTEND:" + Self.utc(event.end),
                "SUMMARY:" + Self.escape(event.summary), "STATUS:" + event.status,
            ]
            if !event.location.isEmpty { lines.append("LOCATION:" + Self.escape(event.location)) }
            if !event.description.isEmpty { lines.append("DESCRIPTION:" + Self.escape(event.description)) }
            lines.append("END:VEVENT")
        }
        lines.append("END:VCALENDAR")
        return lines.map(Self.fold).joined(separator: "\r\n") + "\r\n"
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
