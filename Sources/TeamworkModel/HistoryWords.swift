import Foundation

/// A task's history in words, on the task's own clock, with people and teams by name: what
/// `task history` prints and the board's task page shows (one rendering for both).
public struct HistoryWords: Sendable {
    public var people: [Int64: String]
    public var teams: [Int64: String]
    public var zone: Zone

    public init(people: [Int64: String], teams: [Int64: String], zone: Zone) {
        self.people = people
        self.teams = teams
        self.zone = zone
    }

    /// `Created`, `Changed`, `From the field`, `Deleted`.
    public func what(_ entry: TaskHistoryEntry) -> String {
        switch entry.action {
        case "created": "Created"
        case "updated": entry.fieldChangeID == nil ? "Changed" : "From the field"
        case "field_change": "From the field"
        case "deleted": "Deleted"
        default: entry.action
        }
    }

    /// Who made it: a person's name, else the database role.
    public func who(_ entry: TaskHistoryEntry) -> String {
        entry.actorID.map { person($0) } ?? "database user \(entry.databaseUser)"
    }

    /// When, on the task's clock: `2026-11-27 09:05 CET`.
    public func when(_ date: Date) -> String {
        let time = zone.time(of: date)
        return "\(zone.date(of: date)) \(Self.two(time.hour)):\(Self.two(time.minute)) \(zone.abbreviation(at: date))"
    }

    /// One line per change of the entry, in words.
    public func lines(_ entry: TaskHistoryEntry) -> [String] {
        var changes = entry.changes
        var lines: [String] = []
        if let operation = changes.removeValue(forKey: "operation")?.new {
            let applied = changes.removeValue(forKey: "applied")?.new
            let conflict = changes.removeValue(forKey: "conflict")?.new
            let detail = changes.removeValue(forKey: "detail")?.new
            var line = "\(Self.verb(operation)) on the device"
            // What was used, in one line: "used 6.5 CBL-10", "used 2 “Heat-shrink sleeve”", "removed FUSE-63".
            if operation == "use", let quantity = changes.removeValue(forKey: "value")?.new {
                let item = changes.removeValue(forKey: "item")?.new
                let what = item ?? changes.removeValue(forKey: "note")?.new.map { "“\($0)”" } ?? "a line"
                line += quantity.contains { $0 != "0" && $0 != "." } ? ": used \(quantity) \(what)" : ": removed \(what)"
            }
            // Time, in one line: "work 2026-11-20T08:00:00Z to 2026-11-20T10:30:00Z (2:30)", "travel removed".
            if operation == "time", let value = changes.removeValue(forKey: "value")?.new {
                let kind = changes.removeValue(forKey: "item")?.new ?? "time"
                if let span = TimeOnJob.interval(value), span.end > span.start {
                    line +=
                        ": \(kind) \(TimeOnJob.instant(span.start)) to \(TimeOnJob.instant(span.end))"
                        + " (\(TimeOnJob.hours(TimeOnJob.minutes(span.start, span.end))))"
                } else if TimeOnJob.interval(value) != nil {
                    line += ": \(kind) removed"
                } else {
                    line += ": \(kind) \(TerminalText.inline(String(value.prefix(60))))"
                }
            }
            if applied == "false" { line += ": not applied" + (conflict.map { " (\($0.replacingOccurrences(of: "_", with: " ")))" } ?? "") }
            if let detail, !detail.isEmpty { line += (applied == "false" ? ": " : " — ") + detail }
            lines.append(line)
        }
        let order = ["planned", "status", "assignee_id", "team_id", "priority", "window_start", "window_end", "due_at"]
        let keys = order.filter { changes[$0] != nil } + changes.keys.filter { !order.contains($0) }.sorted()
        let created = entry.action == "created"
        for key in keys {
            guard let change = changes[key] else { continue }
            // At creation, what was left empty or off says nothing ("needs: nothing", "plan superseded: false").
            if created, [nil, "", "false", "[]", "{}"].contains(change.new) { continue }
            guard let line = line(key, change, created: created) else { continue }
            lines.append(line)
        }
        return lines
    }

    /// One change in words; nil when it reads the same before and after (nothing to say). At
    /// creation (`created`), only the value it was made with.
    func line(_ key: String, _ change: FieldChange, created: Bool = false) -> String? {
        let (old, new) = (change.old.flatMap { $0.isEmpty ? nil : $0 }, change.new.flatMap { $0.isEmpty ? nil : $0 })
        func from(_ before: String, to after: String) -> String? {
            if created { return after }
            return before == after ? nil : "\(before) → \(after)"
        }
        switch key {
        case "assignee_id":
            switch (old.flatMap(Int64.init), new.flatMap(Int64.init)) {
            case (nil, let to?): return "assigned to \(person(to))"
            case (let from?, nil): return "unassigned (was \(person(from)))"
            case (let from?, let to?): return "reassigned from \(person(from)) to \(person(to))"
            default: return "assignee unchanged"
            }
        case "team_id":
            switch (old.flatMap(Int64.init), new.flatMap(Int64.init)) {
            case (nil, let to?): return "team: \(team(to))"
            case (let from?, nil): return "taken out of team \(team(from)): a personal task"
            case (let from?, let to?): return "moved from team \(team(from)) to \(team(to))"
            default: return "team unchanged"
            }
        case "completed_by", "created_by", "claimed_by":
            return from(old.flatMap(Int64.init).map(person) ?? "nobody", to: new.flatMap(Int64.init).map(person) ?? "nobody")
                .map { "\(Self.name(key)): \($0)" }
        case "status":
            return from(old.map(Self.status) ?? "none", to: new.map(Self.status) ?? "none").map { "status: \($0)" }
        case "completion_note", "note", "description", "title":
            return "\(Self.name(key)): " + (old.map { "“\($0)” → " } ?? "") + (new.map { "“\($0)”" } ?? "removed")
        case "required_skills":
            return from(old.map(Self.list) ?? "nothing", to: new.map(Self.list) ?? "nothing").map { "needs: \($0)" }
        case "planned":
            return "planned: \(new ?? "by the day planner")"
        case "planned_start":
            return from(old.map(time) ?? "none", to: new.map(time) ?? "none").map { "expected at: \($0)" }
        case "forced":
            return "forced: \(new.map(Self.list) ?? "assigned without a required skill")"
        case "answers":
            return "answers: " + (new.map(answers) ?? "none")
        default:
            if key.hasSuffix("_at") || key.hasPrefix("window_") {
                return from(old.map(time) ?? "none", to: new.map(time) ?? "none").map { "\(Self.name(key)): \($0)" }
            }
            return from(old ?? "none", to: new ?? "none").map { "\(Self.name(key)): \($0)" }
        }
    }

    func person(_ id: Int64) -> String { people[id] ?? "person \(id)" }
    func team(_ id: Int64) -> String { teams[id] ?? "team \(id)" }

    /// A timestamp as PostgreSQL writes it in JSON, on the task's clock.
    func time(_ text: String) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let plain = ISO8601DateFormatter()
        guard let date = formatter.date(from: text) ?? plain.date(from: text) else { return text }
        return when(date)
    }

    /// `{"reading": {"value": "48213", "by": 3, "at": 1764230400000}}` as `reading = 48213 (Ann Field, 09:05)`.
    func answers(_ json: String) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else { return json }
        return object.keys.sorted().map { key -> String in
            guard let answer = object[key] as? [String: Any] else { return "\(key) = \(object[key] ?? "")" }
            var text = "\(key) = \(answer["value"] ?? "")"
            var about: [String] = []
            if let by = (answer["by"] as? NSNumber)?.int64Value { about.append(person(by)) }
            if let at = (answer["at"] as? NSNumber)?.doubleValue {
                let time = zone.time(of: Date(timeIntervalSince1970: at / 1000))
                about.append("\(Self.two(time.hour)):\(Self.two(time.minute))")
            }
            if !about.isEmpty { text += " (\(about.joined(separator: ", ")))" }
            return text
        }.joined(separator: "; ")
    }

    static func verb(_ operation: String) -> String {
        switch operation {
        case "complete": "completed"
        case "start": "started"
        case "claim": "claimed"
        case "reopen": "reopened"
        case "answer": "answered a checklist item"
        case "attach": "attached a file"
        case "use": "recorded what was used"
        case "time": "recorded time"
        default: operation
        }
    }

    static func status(_ raw: String) -> String { TaskStatus(rawValue: raw)?.words ?? raw }
    static func name(_ key: String) -> String {
        [
            "completion_note": "completion note", "location_id": "site", "due_at": "due", "window_start": "window from",
            "window_end": "window to", "started_at": "started", "completed_at": "completed", "checklist_id": "checklist",
        ][key]
            ?? key.replacingOccurrences(of: "_", with: " ")
    }
    static func list(_ json: String) -> String {
        guard let items = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [Any] else { return json }
        return items.isEmpty ? "nothing" : items.map { "\($0)" }.joined(separator: ", ")
    }
    static func two(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }
}
