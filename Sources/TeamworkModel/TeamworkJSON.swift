import Foundation

/// The JSON the tools and the sync endpoint speak: snake_case keys, ISO 8601
/// dates. Decoding maps `team_id` back to `teamID` and `avatar_url` to
/// `avatarURL`, as the model's properties spell them.
public enum TeamworkJSON {
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        decoder.keyDecodingStrategy = .custom { path in Key(propertyName(path.last!.stringValue)) }
        return decoder
    }

    /// A snake_case key as the model's properties spell it: `team_id` → `teamID`, `row_version` → `rowVersion`
    /// (an encoder that converts to snake_case takes it back).
    public static func propertyName(_ key: String) -> String {
        let words = key.split(separator: "_")
        var name = String(words.first ?? "")
        for word in words.dropFirst() {
            switch word {
            case "id": name += "ID"
            case "url": name += "URL"
            default: name += word.prefix(1).uppercased() + word.dropFirst()
            }
        }
        return name
    }

    /// A key by its name, for types whose keys come from a declaration (``TaskSchema``).
    public struct Key: CodingKey, Sendable {
        public var stringValue: String
        public var intValue: Int? { nil }
        public init(_ string: String) { stringValue = string }
        public init?(stringValue: String) { self.stringValue = stringValue }
        public init?(intValue: Int) { nil }
    }
}
