import Foundation

/// What the declaration writes outside Swift, checked into the tree (`scripts/declare` writes them; a test
/// compares them): the task object of docs/openapi.json and the phone's field list (`fields.js`).
extension TaskSchema {
    /// The task object of a page of changes, as docs/openapi.json describes it (JSON text, keys in order).
    public static var openAPITask: String {
        let properties: [(String, JSONText)] =
            travelling.map { ($0.wireKey, $0.openAPISchema) } + [("row_version", .object([("type", "integer"), ("format", "int64")]))]
        let required = travelling.filter(\.wireRequired).map { JSONText.string($0.wireKey) } + ["row_version"]
        return JSONText.object([
            ("type", "object"), ("properties", .object(properties)), ("required", .array(required)),
            ("additionalProperties", .bool(false)),
        ]).text
    }

    /// The phone's field list: an ES module, `fields.js`.
    public static var phoneModule: String {
        func entry(_ column: TaskColumn, _ label: TaskColumn.Label) -> String {
            let kind =
                switch column.kind {
                case .integer: "integer"
                case .text, .answers: "text"
                case .date: "date"
                case .bool: "bool"
                }
            var fields: [(String, JSONText)] = [
                ("key", .string(column.wireKey)), ("kind", .string(kind)),
                ("label", .object([("en", .string(label.english)), ("sv", .string(label.swedish))])),
            ]
            if let unit = label.unit { fields.append(("unit", .string(unit))) }
            return "  " + JSONText.object(fields).text + ","
        }
        let shown = travelling.compactMap { column in column.shown.map { entry(column, $0) } }
        return """
            // A task's columns as Sources/TeamworkModel/TaskSchema.swift declares them: written by scripts/declare,
            // never by hand (a test compares this file with the declaration).

            // The columns the task page lists under their label, in order: nothing else on the page shows them.
            // kind: integer, text, date (milliseconds, read on the task's clock) or bool.
            export const shown = [
            \(shown.joined(separator: "\n"))
            ];

            // Every key a task in a page of changes may carry.
            export const keys = \(JSONText.array(travelling.map { .string($0.wireKey) } + ["row_version"]).text);
            """ + "\n"
    }
}

extension TaskColumn {
    /// How docs/openapi.json describes the column's value on the wire (see ``Wire``).
    var openAPISchema: JSONText {
        let milliseconds: [(String, JSONText)] = [("type", "integer"), ("format", "int64")]
        var schema: [(String, JSONText)] =
            switch (wire, kind) {
            case (.oneOf(let values), _): [("type", "string"), ("enum", .array(values.map(JSONText.string)))]
            case (.pattern(let pattern), _): [("type", "string"), ("pattern", .string(pattern))]
            case (.day, _): [("type", "string"), ("format", "date")]
            case (.list(let item, let most), _):
                [("type", "array"), ("items", .object([("type", "string"), ("pattern", .string(item))])), ("maxItems", .number(most))]
            case (.checklist, _):
                [
                    ("type", "object"),
                    (
                        "properties",
                        .object([
                            ("name", .object([("type", "string")])), ("version", .object([("type", "integer")])),
                            ("items", .object([("type", "array"), ("items", .object([("$ref", "#/components/schemas/ChecklistItem")]))])),
                        ])
                    ),
                    ("required", ["name", "version", "items"]),
                ]
            case (.answers, _):
                [
                    ("type", "array"),
                    (
                        "items",
                        .object([
                            ("type", "object"),
                            (
                                "properties",
                                .object([
                                    ("item", .object([("type", "string")])), ("value", .object([("type", "string")])),
                                    ("by", .object(milliseconds + [("description", "who answered")])),
                                    (
                                        "at",
                                        .object(
                                            milliseconds + [
                                                (
                                                    "description",
                                                    "when, in milliseconds since 1970 (the worker's time, never after the server received it)"
                                                )
                                            ])
                                    ),
                                ])
                            ),
                            ("required", ["item", "value", "by", "at"]),
                        ])
                    ),
                ]
            case (.value, .integer), (.value, .date): milliseconds
            case (.value, .text), (.value, .answers): [("type", "string")]
            case (.value, .bool): [("type", "boolean")]
            }
        if case .line(let bytes) = manager { schema.append(("maxLength", .number(bytes))) }
        if let about {
            schema.append(("description", .string(about)))
        } else if kind == .date {
            schema.append(("description", .string(Self.milliseconds)))
        }
        return .object(schema)
    }
}

/// JSON written with its keys in the order given: what the declaration's documents are made of.
public indirect enum JSONText: Sendable, ExpressibleByStringLiteral, ExpressibleByArrayLiteral {
    case string(String)
    case number(Int)
    case bool(Bool)
    case array([JSONText])
    case object([(String, JSONText)])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONText...) { self = .array(elements) }

    /// On one line, `", "` and `": "` between.
    public var text: String {
        switch self {
        case .string(let value): FieldTask.json(value)
        case .number(let value): String(value)
        case .bool(let value): value ? "true" : "false"
        case .array(let values): "[" + values.map(\.text).joined(separator: ", ") + "]"
        case .object(let fields): "{" + fields.map { FieldTask.json($0.0) + ": " + $0.1.text }.joined(separator: ", ") + "}"
        }
    }
}
