import Foundation

/// One item of a checklist: what a worker checks, reads or chooses on the job.
/// Written once here, the rules for an item and for an answer to it are the
/// ones the device, the sync endpoint and the master (`teamwork_checklist_problem`,
/// sql/functions) all apply; `Tests/Contract/checklist-answers.json` holds the
/// Swift and the SQL side to the same cases.
public struct ChecklistItem: Sendable, Codable, Equatable, Hashable {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        /// Done or not: answered `yes` or `no` (`no` counts as a failed item).
        case check
        /// Free text, one to ``ChecklistItem/maximumTextBytes`` bytes.
        case text
        /// A decimal number, in `unit`, within `min`...`max` when given.
        case number
        /// One of `options`.
        case choice
        /// A photo of the work, answered by an attachment.
        case photo
        /// Someone's signature, answered by an attachment.
        case signature
    }

    /// Unique in its checklist: `[a-z][a-z0-9_]*`, at most 40 characters.
    public var key: String
    public var kind: Kind
    public var label: String
    public var required: Bool
    /// For a number: the unit it is read in (Ω, kWh, bar).
    public var unit: String?
    /// For a number: the least and the most taken, as decimal text (exact on every side).
    public var min: String?
    public var max: String?
    /// For a choice: what may be chosen.
    public var options: [String]?

    public static let maximumTextBytes = 2_000
    public static let maximumLabelBytes = 200
    public static let maximumItems = 100
    public static let maximumOptions = 50
    public static let maximumOptionBytes = 100
    public static let maximumUnitBytes = 20
    /// A number as an answer or a bound: up to 12 digits, and up to 6 after the point.
    /// (`\z`, not `$`: the regular expressions' `$` also matches before a final line break.)
    public static let numberPattern = #"^-?[0-9]{1,12}(\.[0-9]{1,6})?\z"#
    public static let keyPattern = #"^[a-z][a-z0-9_]{0,39}\z"#

    public init(
        key: String, kind: Kind, label: String, required: Bool = false, unit: String? = nil,
        min: String? = nil, max: String? = nil, options: [String]? = nil
    ) {
        self.key = key
        self.kind = kind
        self.label = label
        self.required = required
        self.unit = unit
        self.min = min
        self.max = max
        self.options = options
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case key, kind, label, required, unit, min, max, options
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        let known = Set(CodingKeys.allCases.map(\.rawValue))
        if let unknown = container.allKeys.first(where: { !known.contains($0.stringValue) }) {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "an item has no field '\(unknown.stringValue)'"))
        }
        let keyed = try decoder.container(keyedBy: CodingKeys.self)
        key = try keyed.decode(String.self, forKey: .key)
        let kind = try keyed.decode(String.self, forKey: .kind)
        guard let parsed = Kind(rawValue: kind) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription:
                        "item kind '\(kind)' is not one of \(Kind.allCases.map(\.rawValue).joined(separator: ", "))"))
        }
        self.kind = parsed
        label = try keyed.decode(String.self, forKey: .label)
        required = try keyed.decodeIfPresent(Bool.self, forKey: .required) ?? false
        unit = try keyed.decodeIfPresent(String.self, forKey: .unit)
        min = try keyed.decodeIfPresent(String.self, forKey: .min)
        max = try keyed.decodeIfPresent(String.self, forKey: .max)
        options = try keyed.decodeIfPresent([String].self, forKey: .options)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(key, forKey: .key)
        try container.encode(kind, forKey: .kind)
        try container.encode(label, forKey: .label)
        try container.encode(required, forKey: .required)
        try container.encodeIfPresent(unit, forKey: .unit)
        try container.encodeIfPresent(min, forKey: .min)
        try container.encodeIfPresent(max, forKey: .max)
        try container.encodeIfPresent(options, forKey: .options)
    }

    /// What counts as blank in a text answer (the master's `btrim` takes the same).
    static let blanks: Set<Unicode.Scalar> = [" ", "\t", "\n", "\r", "\u{0B}", "\u{0C}", "\u{85}", "\u{A0}", "\u{2028}", "\u{2029}"]

    /// Whether an item of this kind is answered by an attachment rather than by a value.
    public var takesAttachment: Bool { kind == .photo || kind == .signature }

    /// Why `value` cannot answer this item, or `nil` when it can.
    public func problem(with value: String) -> String? {
        if value.utf8.count > Self.maximumTextBytes { return "an answer has at most \(Self.maximumTextBytes) bytes" }
        switch kind {
        case .check:
            return value == "yes" || value == "no" ? nil : "answer yes or no"
        case .text:
            if value.unicodeScalars.allSatisfy(Self.blanks.contains) { return "the answer is empty" }
            if value.unicodeScalars.contains(where: TerminalText.isUnsafe) { return "the answer holds control characters" }
            return nil
        case .number:
            guard let number = Self.decimal(value) else {
                return "answer a number like 48213 or -0.5 (at most 12 digits, 6 after the point)"
            }
            let unit = self.unit.map { " \($0)" } ?? ""
            if let min, let least = Self.decimal(min), number < least { return "the least taken is \(min)\(unit)" }
            if let max, let most = Self.decimal(max), number > most { return "the most taken is \(max)\(unit)" }
            return nil
        case .choice:
            let options = options ?? []
            // Byte for byte, as the master compares: Swift's == takes canonically equivalent text as equal.
            return options.contains { $0.utf8.elementsEqual(value.utf8) } ? nil : "answer one of: \(options.joined(separator: ", "))"
        case .photo, .signature:
            return "a \(kind.rawValue) item is answered by attaching a file, not by a value"
        }
    }

    /// Whether `answer` marks this item as failed: a check answered `no`.
    public func failed(by answer: String?) -> Bool {
        kind == .check && answer == "no"
    }

    /// `text` as an exact decimal, if it is a number as ``numberPattern`` says.
    public static func decimal(_ text: String) -> Decimal? {
        guard text.range(of: numberPattern, options: .regularExpression) != nil else { return nil }
        return Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
    }
}

/// A checklist as one published version: what a task carries and a worker fills in.
/// A published version never changes; changing a checklist publishes the next one.
public struct ChecklistForm: Sendable, Codable, Equatable, Hashable {
    public var name: String
    public var version: Int
    public var items: [ChecklistItem]

    public init(name: String, version: Int, items: [ChecklistItem]) {
        self.name = name
        self.version = version
        self.items = items
    }

    /// Names: a letter or digit, then letters, digits, spaces, dots, underscores or dashes (80 at most).
    public static let namePattern = #"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,79}\z"#

    public func item(_ key: String) -> ChecklistItem? { items.first { $0.key == key } }

    /// The keys of required items `answers` has no answer for, in the checklist's order.
    public func missing(in answers: [String: ChecklistAnswer]) -> [String] {
        items.filter { $0.required && answers[$0.key] == nil }.map(\.key)
    }

    /// The keys of items `answers` marks as failed, in the checklist's order.
    public func failed(in answers: [String: ChecklistAnswer]) -> [String] {
        items.filter { $0.failed(by: answers[$0.key]?.value) }.map(\.key)
    }

    /// Why `items` cannot be published as a checklist, or `nil` when they can.
    public static func problem(name: String, items: [ChecklistItem]) -> String? {
        if name.range(of: namePattern, options: .regularExpression) == nil {
            return "a checklist name starts with a letter or digit and has letters, digits, spaces, dots, _ or - (80 at most)"
        }
        if items.isEmpty { return "a checklist needs at least one item" }
        if items.count > ChecklistItem.maximumItems { return "a checklist has at most \(ChecklistItem.maximumItems) items" }
        var keys: Set<String> = []
        for item in items {
            if let problem = problem(of: item) { return "item '\(TerminalText.inline(item.key))': \(problem)" }
            if !keys.insert(item.key).inserted { return "item '\(item.key)' is there twice" }
        }
        return nil
    }

    private static func problem(of item: ChecklistItem) -> String? {
        if item.key.range(of: ChecklistItem.keyPattern, options: .regularExpression) == nil {
            return "a key is a lowercase letter, then lowercase letters, digits or _ (40 at most)"
        }
        if !isOneLine(item.label, most: ChecklistItem.maximumLabelBytes) {
            return "a label has 1 to \(ChecklistItem.maximumLabelBytes) bytes on one line"
        }
        if item.kind != .number, item.unit != nil || item.min != nil || item.max != nil {
            return "only a number has a unit or a range"
        }
        if item.kind != .choice, item.options != nil { return "only a choice has options" }
        switch item.kind {
        case .number:
            if let unit = item.unit, !isOneLine(unit, most: ChecklistItem.maximumUnitBytes) {
                return "a unit has 1 to \(ChecklistItem.maximumUnitBytes) bytes"
            }
            let least = item.min.map(ChecklistItem.decimal), most = item.max.map(ChecklistItem.decimal)
            if least == .some(nil) || most == .some(nil) { return "a range is two numbers like 0..1.5" }
            if let least = least ?? nil, let most = most ?? nil, least > most { return "the range's least is above its most" }
        case .choice:
            let options = item.options ?? []
            if options.count < 2 || options.count > ChecklistItem.maximumOptions {
                return "a choice has 2 to \(ChecklistItem.maximumOptions) options"
            }
            if Set(options).count != options.count { return "a choice's options differ from each other" }
            if options.contains(where: { !isOneLine($0, most: ChecklistItem.maximumOptionBytes) }) {
                return "an option has 1 to \(ChecklistItem.maximumOptionBytes) bytes on one line"
            }
        case .check, .text, .photo, .signature:
            break
        }
        return nil
    }

    /// Whether `text` is something to print on one line: not blank, at most `most` bytes, no control characters.
    public static func isOneLine(_ text: String, most: Int) -> Bool {
        !text.unicodeScalars.allSatisfy(ChecklistItem.blanks.contains) && text.utf8.count <= most
            && !text.unicodeScalars.contains { TerminalText.isUnsafe($0) || $0 == "\n" || $0 == "\t" }
    }
}

/// The latest answer to one item: its value, who gave it and when (milliseconds since 1970).
public struct ChecklistAnswer: Sendable, Codable, Equatable, Hashable {
    public var value: String
    public var by: Int64
    public var at: Int64

    public init(value: String, by: Int64, at: Int64) {
        self.value = value
        self.by = by
        self.at = at
    }

    public init(value: String, by: Int64, at date: Date) {
        self.init(value: value, by: by, at: date.millisecondsSince1970)
    }

    public var date: Date { Date(millisecondsSince1970: at) }
}

/// Any key, to find fields a strict decoder does not know.
public struct AnyCodingKey: CodingKey {
    public var stringValue: String
    public var intValue: Int? { nil }
    public init?(stringValue: String) { self.stringValue = stringValue }
    public init?(intValue: Int) { nil }
}

/// One answer with its item's key: how answers travel in JSON the tools and the
/// endpoint write (a list: their snake_case key strategies would rename an
/// object's keys, which are item keys).
public struct AnsweredItem: Sendable, Codable, Equatable, Hashable {
    public var item: String
    public var value: String
    public var by: Int64
    public var at: Int64

    public init(item: String, value: String, by: Int64, at: Int64) {
        self.item = item
        self.value = value
        self.by = by
        self.at = at
    }

    /// `answers` as a list, by item key.
    public static func list(_ answers: [String: ChecklistAnswer]) -> [AnsweredItem] {
        answers.sorted { $0.key < $1.key }.map { AnsweredItem(item: $0.key, value: $0.value.value, by: $0.value.by, at: $0.value.at) }
    }

    /// A list back into answers by item key (a later entry for the same item wins).
    public static func answers(_ list: [AnsweredItem]) -> [String: ChecklistAnswer] {
        var answers: [String: ChecklistAnswer] = [:]
        for entry in list { answers[entry.item] = ChecklistAnswer(value: entry.value, by: entry.by, at: entry.at) }
        return answers
    }
}

extension ChecklistItem {
    /// Its kind as a reader wants it: `number (Ω, 0..1)`, `choice (intact|broken)`.
    public var describedKind: String {
        switch kind {
        case .number:
            let range = (min != nil || max != nil) ? "\(min ?? "")..\(max ?? "")" : nil
            let details = [unit, range].compactMap { $0 }
            return details.isEmpty ? "number" : "number (\(details.joined(separator: ", ")))"
        case .choice:
            return "choice (\((options ?? []).joined(separator: "|")))"
        default:
            return kind.rawValue
        }
    }
}

extension ChecklistForm {
    /// One line: `Substation visit v2: 3 of 5 answered; to answer: earth, seal; failed: isolated`.
    public func summary(_ answers: [String: ChecklistAnswer]) -> String {
        let answered = items.filter { answers[$0.key] != nil }.count
        var line = "\(TerminalText.inline(name)) v\(version): \(answered) of \(items.count) answered"
        let missing = missing(in: answers), failed = failed(in: answers)
        if !missing.isEmpty { line += "; to answer: " + missing.joined(separator: ", ") }
        if !failed.isEmpty { line += "; failed: " + failed.joined(separator: ", ") }
        return line
    }
}
