import Foundation

/// What a worker used on a task (issue 53): a part of the catalogue, or a line of its own with a
/// description, in a quantity. One line per person, task and part (or description): recording it
/// again sets the quantity (a correction), and 0 removes the line.
public enum Material {
    /// The most of anything on one line (100 km of cable counted in metres).
    public static let mostQuantity = 100_000
    /// A quantity: digits, at most three after the point; no sign, exponent or separators.
    public static let quantityPattern = #"^[0-9]{1,6}(\.[0-9]{1,3})?$"#
    /// The longest description of a line not in the catalogue, in UTF-8 bytes.
    public static let mostDescriptionBytes = 200

    /// Why `text` is not a quantity, or `nil` when it is one (0 included: it removes the line).
    public static func quantityProblem(_ text: String) -> String? {
        guard text.range(of: quantityPattern, options: .regularExpression) != nil, !text.contains(where: \.isNewline),
            let number = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), number <= Decimal(mostQuantity)
        else {
            return "a quantity is a number from 0 to \(mostQuantity), at most 3 decimals, like 2 or 12.5"
        }
        return nil
    }

    /// Why `text` cannot describe a line not in the catalogue, or `nil`.
    public static func descriptionProblem(_ text: String) -> String? {
        ChecklistForm.isOneLine(text, most: mostDescriptionBytes)
            ? nil : "a line not in the catalogue is described in one line of 1 to \(mostDescriptionBytes) bytes"
    }
}

/// One line of what was used on a task, as the master keeps it: the catalogue's name, unit and
/// price at the time it was recorded.
public struct MaterialLine: Sendable, Codable, Equatable {
    /// The part's code; `nil` for a line not in the catalogue.
    public var partCode: String?
    /// The part's name, or the line's description.
    public var name: String
    /// The part's unit (`m`, `piece`…); `nil` for a line not in the catalogue.
    public var unit: String?
    /// Exact: `12.5`.
    public var quantity: String
    public var unitPrice: String?
    public var currency: String?
    /// `quantity × unitPrice`, to two decimals; `nil` without a price.
    public var total: String?
    public var personID: Int64
    public var personName: String?
    public var recordedAt: Date

    public init(
        partCode: String?, name: String, unit: String?, quantity: String, unitPrice: String?, currency: String?, total: String?,
        personID: Int64, personName: String?, recordedAt: Date
    ) {
        (self.partCode, self.name, self.unit, self.quantity) = (partCode, name, unit, quantity)
        (self.unitPrice, self.currency, self.total) = (unitPrice, currency, total)
        (self.personID, self.personName, self.recordedAt) = (personID, personName, recordedAt)
    }

    /// The lines' totals per currency, sorted by currency, to two decimals (`128.50`); lines
    /// without a price add nothing.
    public static func totals(_ lines: [MaterialLine]) -> [(currency: String, total: String)] {
        var sums: [String: Decimal] = [:]
        for line in lines {
            guard let currency = line.currency, let total = line.total.flatMap({ Decimal(string: $0, locale: posix) }) else { continue }
            sums[currency, default: 0] += total
        }
        return sums.sorted { $0.key < $1.key }.map { ($0.key, money($0.value)) }
    }

    static let posix = Locale(identifier: "en_US_POSIX")

    /// An amount to two decimals, exactly: `128.50`.
    public static func money(_ amount: Decimal) -> String {
        var value = amount, rounded = Decimal()
        NSDecimalRound(&rounded, &value, 2, .plain)
        let text = NSDecimalNumber(decimal: rounded).description(withLocale: posix)
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let fraction = parts.count > 1 ? String(parts[1]) : ""
        return "\(parts[0]).\(fraction.padding(toLength: 2, withPad: "0", startingAt: 0))"
    }
}

/// One line of what was used on a task completed in a report's period (`report materials`): the
/// task, the day it was completed on its own clock, and the line as billing reads it.
public struct MaterialUse: Sendable, Codable, Equatable {
    public var taskID: Int64
    public var title: String
    public var team: String?
    public var customer: String?
    /// The day the task was completed, on its own clock (its site's or team's zone).
    public var completedOn: String
    public var line: MaterialLine

    public init(taskID: Int64, title: String, team: String?, customer: String?, completedOn: String, line: MaterialLine) {
        (self.taskID, self.title, self.team, self.customer, self.completedOn, self.line) = (
            taskID, title, team, customer, completedOn, line
        )
    }

    /// A part's (or a described line's) totals over `uses`: the quantity, the amount per currency
    /// (lines without a price add none), and on how many tasks it was used; by code, then name.
    public struct Summary: Sendable, Codable, Equatable {
        public var partCode: String?
        public var name: String
        public var unit: String?
        public var quantity: String
        public var currency: String?
        public var amount: String?
        public var tasks: Int
    }

    public static func summary(_ uses: [MaterialUse]) -> [Summary] {
        struct Key: Hashable {
            var code: String?
            var name: String
            var unit: String?
            var currency: String?
        }
        var sums: [Key: (name: String, quantity: Decimal, amount: Decimal?, tasks: Set<Int64>)] = [:]
        for use in uses {
            let line = use.line
            // A described line is one whatever its letters' case; it shows as first written.
            let key = Key(
                code: line.partCode, name: line.partCode == nil ? line.name.lowercased() : "", unit: line.unit, currency: line.currency)
            var sum = sums[key] ?? (line.name, 0, nil, [])
            sum.quantity += Decimal(string: line.quantity, locale: MaterialLine.posix) ?? 0
            if let total = line.total.flatMap({ Decimal(string: $0, locale: MaterialLine.posix) }) {
                sum.amount = (sum.amount ?? 0) + total
            }
            sum.tasks.insert(use.taskID)
            sums[key] = sum
        }
        return sums.map { key, sum in
            Summary(
                partCode: key.code, name: sum.name, unit: key.unit,
                quantity: NSDecimalNumber(decimal: sum.quantity).description(withLocale: MaterialLine.posix), currency: key.currency,
                amount: sum.amount.map(MaterialLine.money), tasks: sum.tasks.count)
        }.sorted {
            ($0.partCode == nil ? 1 : 0, $0.partCode?.lowercased() ?? $0.name, $0.currency ?? "") < (
                $1.partCode == nil ? 1 : 0, $1.partCode?.lowercased() ?? $1.name, $1.currency ?? ""
            )
        }
    }
}
