import Foundation

/// The language a customer's messages are written in (docs/integrations.md).
public enum CustomerLanguage: String, Sendable, Codable, CaseIterable {
    case en, sv

    public static func parse(_ text: String) throws -> CustomerLanguage {
        guard let language = CustomerLanguage(rawValue: text.lowercased()) else {
            throw TeamworkError.invalid("language must be one of: \(allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return language
    }
}

/// Whom a site's work is for: a contact the customer messages go to (docs/integrations.md,
/// "Customers and their messages"). A site names its customer; a task inherits it or names its
/// own. An erased customer keeps its id (the work's history points at it) and nothing personal.
public struct Customer: Sendable, Codable, Equatable, Identifiable {
    public var id: Int64
    public var name: String
    public var email: String?
    /// E.164: `+46701234567`.
    public var phone: String?
    public var language: CustomerLanguage
    /// Agreed to get messages; none is sent without it.
    public var consent: Bool
    public var erasedAt: Date?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: Int64, name: String, email: String?, phone: String?, language: CustomerLanguage, consent: Bool, erasedAt: Date?,
        createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.name = name
        self.email = email
        self.phone = phone
        self.language = language
        self.consent = consent
        self.erasedAt = erasedAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// A customer's name: 1 to 200 characters, not blank.
    public static func validName(_ text: String) throws -> String {
        let name = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !name.isEmpty, name.count <= 200, !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f })
        else { throw TeamworkError.invalid("a customer's name is 1 to 200 characters on one line") }
        return name
    }

    /// An address mail can go to as it is: one `@`, a domain with a dot, and nothing a mail
    /// header would read as more than one address (no spaces, quotes, brackets, commas or semicolons).
    public static func validEmail(_ text: String) throws -> String {
        let email = try Validate.email(text)
        let parts = email.split(separator: "@")
        guard !email.contains(where: { "<>,;:\"()[]\\".contains($0) }),
            parts[1].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") }),
            let top = parts[1].split(separator: ".").last, top.count >= 2, top.allSatisfy(\.isLetter)
        else { throw TeamworkError.invalid("email is not an address mail can go to") }
        return email
    }

    /// A phone number in E.164 (`+46 70-123 45 67` is taken as `+46701234567`).
    public static func validPhone(_ text: String) throws -> String {
        let kept = text.filter { !" -().".contains($0) }
        guard kept.hasPrefix("+"), (8...16).contains(kept.count), kept.dropFirst().allSatisfy(\.isASCII),
            kept.dropFirst().allSatisfy(\.isNumber), kept.dropFirst().first != "0"
        else {
            throw TeamworkError.invalid("a phone number is + and the country code, like +46 70 123 45 67")
        }
        return kept
    }
}

/// A new customer, checked.
public struct NewCustomer: Sendable, Equatable {
    public var name: String
    public var email: String?
    public var phone: String?
    public var language: CustomerLanguage
    public var consent: Bool

    public init(
        name: String, email: String? = nil, phone: String? = nil, language: CustomerLanguage = .en, consent: Bool = false
    )
        throws
    {
        self.name = try Customer.validName(name)
        self.email = try email.map(Customer.validEmail)
        self.phone = try phone.map(Customer.validPhone)
        self.language = language
        self.consent = consent
    }
}

/// Changes to a customer; nil leaves a field, `.some(nil)` clears it.
public struct CustomerChanges: Sendable, Equatable {
    public var name: String?
    public var email: String??
    public var phone: String??
    public var language: CustomerLanguage?
    public var consent: Bool?

    public init(
        name: String? = nil, email: String?? = nil, phone: String?? = nil, language: CustomerLanguage? = nil, consent: Bool? = nil
    ) throws {
        self.name = try name.map(Customer.validName)
        if case .some(.some(let text)) = email { self.email = .some(try Customer.validEmail(text)) } else { self.email = email }
        if case .some(.some(let text)) = phone { self.phone = .some(try Customer.validPhone(text)) } else { self.phone = phone }
        self.language = language
        self.consent = consent
    }

    public var isEmpty: Bool { name == nil && email == nil && phone == nil && language == nil && consent == nil }
}

/// What a customer answered through the link in their newest booked or changed message.
public enum AppointmentAnswer: String, Sendable, Codable {
    case none, confirmed, move, cancel

    /// As the board and the CLI say it.
    public var words: String {
        switch self {
        case .none: "no answer"
        case .confirmed: "confirmed"
        case .move: "asked to move"
        case .cancel: "cancelled by the customer"
        }
    }
}

/// A task's appointment with its customer: its sequence (rising with each change) and the answer.
public struct Appointment: Sendable, Codable, Equatable {
    public var taskID: Int64
    public var customerID: Int64
    public var sequence: Int
    public var answer: AppointmentAnswer
    /// The window the customer asked to move to.
    public var asked: TimeWindow?
    public var answeredAt: Date?
    /// Why the customer is not told of the visit at all, when they are not: `no consent`,
    /// `no email or phone`, `erased`. Nil when messages may reach them.
    public var notTold: String?

    public init(
        taskID: Int64, customerID: Int64, sequence: Int, answer: AppointmentAnswer, asked: TimeWindow?, answeredAt: Date?,
        notTold: String? = nil
    ) {
        self.taskID = taskID
        self.customerID = customerID
        self.sequence = sequence
        self.answer = answer
        self.asked = asked
        self.answeredAt = answeredAt
        self.notTold = notTold
    }
}

/// One message to a customer (docs/integrations.md).
public struct CustomerMessage: Sendable, Codable, Equatable, Identifiable {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        case booked, changed, cancelled, reminder
        case onMyWay = "on_my_way"
        case done
    }

    public enum Channel: String, Sendable, Codable {
        case email, sms
    }

    public enum State: String, Sendable, Codable {
        /// `held`: waiting for the dispatcher to release its day (`customer release`).
        case pending, held, sent, failed, skipped
    }

    public var id: Int64
    public var taskID: Int64
    public var customerID: Int64
    public var kind: Kind
    public var sequence: Int
    public var channel: Channel
    public var afterTaskID: Int64?
    public var state: State
    /// Why it was skipped or failed, or what the last attempt met.
    public var reason: String?
    public var attempts: Int
    public var sentAt: Date?
    public var createdAt: Date

    public init(
        id: Int64, taskID: Int64, customerID: Int64, kind: Kind, sequence: Int, channel: Channel, afterTaskID: Int64?,
        state: State, reason: String?, attempts: Int, sentAt: Date?, createdAt: Date
    ) {
        self.id = id
        self.taskID = taskID
        self.customerID = customerID
        self.kind = kind
        self.sequence = sequence
        self.channel = channel
        self.afterTaskID = afterTaskID
        self.state = state
        self.reason = reason
        self.attempts = attempts
        self.sentAt = sentAt
        self.createdAt = createdAt
    }
}

/// A window as a customer reads it, on the site's clock, in their language:
/// `Thursday 3 December, 10:00–12:00` or `torsdag 3 december, 10:00–12:00`.
public enum MessageWindow {
    public static func text(_ window: TimeWindow, zone: Zone, language: CustomerLanguage) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: language == .sv ? "sv_SE" : "en_GB")
        formatter.timeZone = zone.timeZone
        formatter.dateFormat = "EEEE d MMMM"
        let day = formatter.string(from: window.start)
        formatter.dateFormat = "HH:mm"
        return "\(day), " + formatter.string(from: window.start) + "–" + formatter.string(from: window.end)
    }
}

extension Appointment {
    /// Where the visit stands with the customer, in words (the board, the task page, the tools):
    /// `confirmed`, `asked to move to Tue 2 Dec 10:00–12:00`, `no answer`, or `not told: no consent`
    /// when no message can reach them (rather than "no answer" to a question never asked).
    public func words(in zone: Zone) -> String {
        if answer == .none, let notTold { return "not told: " + notTold }
        if answer == .move, let asked { return "asked to move to " + asked.compact(in: zone) }
        return answer.words
    }
}
