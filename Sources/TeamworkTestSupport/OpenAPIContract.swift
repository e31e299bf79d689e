import Foundation

/// The sync protocol's OpenAPI document (`docs/openapi.json`), read as plain
/// JSON, and a checker for the part of JSON Schema it uses: `$ref`, `type`
/// (one or several, `null` among them), `properties`, `required`,
/// `additionalProperties`, `items`, `enum`, `oneOf`, `minimum`/`maximum`,
/// `minLength`, `maxItems`, `pattern` and `format: date-time`. Enough to hold
/// the running server's real answers to the contract, with no extra dependency.
public struct OpenAPIContract: @unchecked Sendable {
    public let document: [String: Any]

    /// The repository's `docs/openapi.json`.
    public init() throws {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appending(path: "docs/openapi.json")
        guard let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any] else {
            throw Violation(path: "", message: "docs/openapi.json is not a JSON object")
        }
        document = object
    }

    public struct Violation: Error, CustomStringConvertible {
        public var path: String
        public var message: String
        public var description: String { "\(path.isEmpty ? "$" : path): \(message)" }
    }

    /// The schema of a response the document declares, or why there is none: of the media type
    /// `sent` begins with when the response declares several (else its first).
    /// `nil` schema: the response is declared without a JSON body.
    public func responseSchema(
        path: String, method: String, status: Int, sent: String = ""
    ) throws -> (schema: [String: Any]?, contentType: String) {
        guard let item = (document["paths"] as? [String: Any])?[path] as? [String: Any],
            let operation = item[method.lowercased()] as? [String: Any],
            let responses = operation["responses"] as? [String: Any]
        else { throw Violation(path: path, message: "\(method) \(path) is not in the document") }
        guard let response = responses[String(status)] as? [String: Any] else {
            throw Violation(path: path, message: "\(method) \(path) does not declare status \(status)")
        }
        guard let content = response["content"] as? [String: Any],
            let (type, media) = content.first(where: { sent.hasPrefix($0.key) }) ?? content.sorted(by: { $0.key < $1.key }).first
        else { return (nil, "") }
        return ((media as? [String: Any])?["schema"] as? [String: Any], type)
    }

    /// A named schema from `components/schemas`.
    public func schema(named name: String) -> [String: Any]? {
        ((document["components"] as? [String: Any])?["schemas"] as? [String: Any])?[name] as? [String: Any]
    }

    /// Checks a decoded JSON value (from `JSONSerialization`) against a schema; throws the first violation.
    public func validate(_ value: Any, against schema: [String: Any], at path: String = "") throws {
        if let reference = schema["$ref"] as? String {
            let name = String(reference.split(separator: "/").last ?? "")
            guard let target = self.schema(named: name) else { throw Violation(path: path, message: "unknown $ref \(reference)") }
            return try validate(value, against: target, at: path)
        }
        if let choices = schema["oneOf"] as? [[String: Any]] {
            let matching = choices.filter { (try? validate(value, against: $0, at: path)) != nil }.count
            guard matching == 1 else { throw Violation(path: path, message: "matches \(matching) of oneOf's \(choices.count) schemas") }
            return
        }
        let types: [String] = (schema["type"] as? [String]) ?? (schema["type"] as? String).map { [$0] } ?? []
        if !types.isEmpty, !types.contains(where: { Self.value(value, is: $0) }) {
            throw Violation(path: path, message: "expected \(types.joined(separator: " or ")), found \(Self.kind(of: value))")
        }
        if let allowed = schema["enum"] as? [Any], !allowed.contains(where: { "\($0)" == "\(value)" }) {
            throw Violation(path: path, message: "'\(value)' is not one of \(allowed)")
        }
        if let number = value as? NSNumber, Self.kind(of: value) == "number" {
            if let minimum = schema["minimum"] as? Double, number.doubleValue < minimum {
                throw Violation(path: path, message: "\(number) is below \(minimum)")
            }
            if let maximum = schema["maximum"] as? Double, number.doubleValue > maximum {
                throw Violation(path: path, message: "\(number) is above \(maximum)")
            }
        }
        if let text = value as? String {
            if let least = schema["minLength"] as? Int, text.count < least {
                throw Violation(path: path, message: "shorter than \(least)")
            }
            if let pattern = schema["pattern"] as? String, text.range(of: pattern, options: .regularExpression) == nil {
                throw Violation(path: path, message: "'\(text)' does not match \(pattern)")
            }
            if schema["format"] as? String == "date-time", ISO8601DateFormatter().date(from: text) == nil {
                throw Violation(path: path, message: "'\(text)' is not an RFC 3339 date-time")
            }
        }
        if let items = value as? [Any] {
            if let most = schema["maxItems"] as? Int, items.count > most { throw Violation(path: path, message: "more than \(most) items") }
            if let itemSchema = schema["items"] as? [String: Any] {
                for (index, item) in items.enumerated() { try validate(item, against: itemSchema, at: "\(path)[\(index)]") }
            }
        }
        if let object = value as? [String: Any] {
            let properties = schema["properties"] as? [String: Any] ?? [:]
            for key in schema["required"] as? [String] ?? [] where object[key] == nil {
                throw Violation(path: path, message: "missing required '\(key)'")
            }
            for (key, field) in object {
                if let propertySchema = properties[key] as? [String: Any] {
                    try validate(field, against: propertySchema, at: "\(path).\(key)")
                } else if let extra = schema["additionalProperties"] {
                    if let allowed = extra as? Bool, !allowed {
                        throw Violation(path: path, message: "'\(key)' is not in the schema")
                    }
                    if let extraSchema = extra as? [String: Any] { try validate(field, against: extraSchema, at: "\(path).\(key)") }
                }
            }
        }
    }

    static func value(_ value: Any, is type: String) -> Bool {
        switch type {
        case "null": return value is NSNull
        case "boolean": return kind(of: value) == "boolean"
        case "integer":
            return kind(of: value) == "number" && (value as? NSNumber).map { $0.doubleValue.rounded() == $0.doubleValue } == true
        case "number": return kind(of: value) == "number"
        case "string": return value is String
        case "array": return value is [Any]
        case "object": return value is [String: Any]
        default: return false
        }
    }

    static func kind(of value: Any) -> String {
        if value is NSNull { return "null" }
        if value is String { return "string" }
        if value is [Any] { return "array" }
        if value is [String: Any] { return "object" }
        if let number = value as? NSNumber {
            // true and false are NSNumbers of type 'c' (and on Linux `1 is Bool` holds, so that cannot tell).
            if String(cString: number.objCType) == "c" { return "boolean" }
            return "number"
        }
        return "unknown"
    }
}
