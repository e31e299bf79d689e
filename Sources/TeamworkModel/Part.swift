import Foundation

/// A part or material a job may use (issue 53): counted in its unit, optionally priced.
public struct Part: Sendable, Codable, Equatable, Identifiable {
    /// What a part is counted in.
    public enum Unit: String, Sendable, Codable, CaseIterable {
        case piece, m, m2, m3, l, kg, h

        /// In words, for a person.
        public var words: String {
            switch self {
            case .piece: "piece"
            case .m: "metre"
            case .m2: "square metre"
            case .m3: "cubic metre"
            case .l: "litre"
            case .kg: "kilogram"
            case .h: "hour"
            }
        }
    }

    public var id: Int64
    /// Unique, whatever its case: `CBL-3x2.5`.
    public var code: String
    public var name: String
    public var unit: Unit
    /// The price of one unit, exact (`12.50`), with its currency; both or neither.
    public var unitPrice: String?
    public var currency: String?
    /// Kept for the history of the jobs that used it, no longer offered.
    public var retiredAt: Date?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: Int64, code: String, name: String, unit: Unit, unitPrice: String?, currency: String?, retiredAt: Date?,
        createdAt: Date, updatedAt: Date
    ) {
        (self.id, self.code, self.name, self.unit) = (id, code, name, unit)
        (self.unitPrice, self.currency, self.retiredAt, self.createdAt, self.updatedAt) = (
            unitPrice, currency, retiredAt, createdAt, updatedAt
        )
    }
}

/// A part to add, or what a change or an import says of one: validated on construction, so a
/// hostile field is refused with one line before anything is asked of the master.
public struct NewPart: Sendable, Equatable {
    public var code: String
    public var name: String
    public var unit: Part.Unit
    public var unitPrice: String?
    public var currency: String?

    public static let codePattern = #"^[A-Za-z0-9][A-Za-z0-9._/-]{0,39}$"#

    /// Whether `code` is a part's code (``codePattern``, with nothing after it: ICU's `$` would
    /// also match before a final newline, which PostgreSQL's does not).
    public static func isCode(_ code: String) -> Bool {
        code.range(of: codePattern, options: .regularExpression) != nil && !code.contains(where: \.isNewline)
    }
    /// At most 9 digits before the point and 4 after; no sign, no exponent, no thousands separators.
    public static let pricePattern = #"^[0-9]{1,9}(\.[0-9]{1,4})?$"#

    public init(code: String, name: String, unit: String, unitPrice: String? = nil, currency: String? = nil) throws {
        guard Self.isCode(code) else {
            throw TeamworkError.invalid(
                "a part's code is 1 to 40 letters, digits, '.', '_', '/' or '-', starting with a letter or digit (not '\(TerminalText.inline(String(code.prefix(40))))')"
            )
        }
        self.code = code
        self.name = try Validate.name(name, field: "name")
        guard let unit = Part.Unit(rawValue: unit) else {
            throw TeamworkError.invalid(
                "a part's unit is one of \(Part.Unit.allCases.map(\.rawValue).joined(separator: ", ")) (not '\(TerminalText.inline(String(unit.prefix(20))))')"
            )
        }
        self.unit = unit
        (self.unitPrice, self.currency) = try Self.price(unitPrice, currency)
    }

    /// A price and its currency, both or neither: `12.50` and `SEK`.
    public static func price(_ price: String?, _ currency: String?) throws -> (String?, String?) {
        let price = price.flatMap { $0.isEmpty ? nil : $0 }, currency = currency.flatMap { $0.isEmpty ? nil : $0 }
        switch (price, currency) {
        case (nil, nil): return (nil, nil)
        case (let price?, let currency?):
            guard price.range(of: pricePattern, options: .regularExpression) != nil else {
                throw TeamworkError.invalid(
                    "a unit price is a number like 12.50: at most 9 digits, 4 after the point, not negative (not '\(TerminalText.inline(String(price.prefix(20))))')"
                )
            }
            guard currency.range(of: #"^[A-Z]{3}$"#, options: .regularExpression) != nil else {
                throw TeamworkError.invalid(
                    "a currency is three capital letters, like SEK or EUR (not '\(TerminalText.inline(String(currency.prefix(20))))')")
            }
            return (price, currency)
        default:
            throw TeamworkError.invalid("a unit price and its currency go together: give both or neither")
        }
    }
}
