import Foundation

/// The JSON the tools and the sync endpoint speak: snake_case keys, ISO 8601
/// dates. Decoding maps `team_id` back to `teamID` and `avatar_url` to
/// `avatarURL`, as the model's properties spell them.
public enum TeamworkJSON {
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        decoder.keyDecodingStrategy = .custom { path in
            let words = path.last!.stringValue.split(separator: "_")
            var name = String(words.first ?? "")
            for word in words.dropFirst() {
                switch word {
                case "id": name += "ID"
                case "url": name += "URL"
                default: name += word.prefix(1).uppercased() + word.dropFirst()
                }
            }
            return Key(name)
        }
        return decoder
    }

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
