import Foundation

/// Field rules shared by the CLI, the CSV import and the store, so every entry
/// point refuses the same bad input with the same message.
public enum Validate {
    /// Longest accepted name or title, in characters.
    public static let maximumNameLength = 500

    /// A name or title: not blank, no longer than ``maximumNameLength``. Kept as typed.
    public static func name(_ value: String, field: String) throws -> String {
        if value.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            throw TeamworkError.invalid("\(field) must not be empty")
        }
        if value.count > maximumNameLength {
            throw TeamworkError.invalid("\(field) is longer than \(maximumNameLength) characters")
        }
        return value
    }

    /// An email address: one `@` with something on both sides, no spaces. Stored as typed.
    public static func email(_ value: String) throws -> String {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        let parts = trimmed.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasPrefix("."),
            !parts[1].hasSuffix("."), !trimmed.contains(where: \.isWhitespace), trimmed.count <= 254
        else {
            throw TeamworkError.invalid("email is not a valid address")
        }
        return trimmed
    }

    /// A team slug: 1 to 40 of `a-z 0-9 -`, not starting or ending with `-`.
    public static func slug(_ value: String) throws -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-")
        guard (1...40).contains(value.count), value.allSatisfy(allowed.contains),
            value.first != "-", value.last != "-"
        else {
            throw TeamworkError.invalid("slug must be 1-40 characters of a-z, 0-9 and '-', not starting or ending with '-'")
        }
        return value
    }

    /// A colour as `#rrggbb`; returned in lower case.
    public static func color(_ value: String) throws -> String {
        let lower = value.lowercased()
        guard lower.count == 7, lower.first == "#", lower.dropFirst().allSatisfy(\.isHexDigit) else {
            throw TeamworkError.invalid("colour must be #rrggbb, for example #d03030")
        }
        return lower
    }

    /// An http(s) URL.
    public static func url(_ value: String) throws -> String {
        guard let url = URL(string: value), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", url.host != nil
        else {
            throw TeamworkError.invalid("avatar must be an http or https URL")
        }
        return value
    }

    public static func latitude(_ value: Double) throws -> Double {
        guard value.isFinite, (-90...90).contains(value) else {
            throw TeamworkError.invalid("latitude must be between -90 and 90")
        }
        return value
    }

    public static func longitude(_ value: Double) throws -> Double {
        guard value.isFinite, (-180...180).contains(value) else {
            throw TeamworkError.invalid("longitude must be between -180 and 180")
        }
        return value
    }

    /// Minutes on site of one task, or a team's default: 1 to 720 (twelve hours).
    public static func durationMinutes(_ value: Int) throws -> Int {
        guard (1...720).contains(value) else { throw TeamworkError.invalid("minutes on site must be 1 to 720") }
        return value
    }
}
