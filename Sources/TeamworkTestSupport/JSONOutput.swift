import Foundation

/// Reads the tools' `--json` output (snake_case keys, ISO 8601 dates) back into
/// the model types, whose properties spell `ID` and `URL` in capitals.
public enum JSONOutput {
    public static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        decoder.keyDecodingStrategy = .custom { path in
            let key = path.last!.stringValue
            let words = key.split(separator: "_")
            var name = String(words.first ?? "")
            for word in words.dropFirst() {
                switch word {
                case "id": name += "ID"
                case "url": name += "URL"
                default: name += word.prefix(1).uppercased() + word.dropFirst()
                }
            }
            return AnyKey(name)
        }
        return try decoder.decode(type, from: Data(text.utf8))
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
