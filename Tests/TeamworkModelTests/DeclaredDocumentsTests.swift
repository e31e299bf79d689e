import Foundation
import Testing

@testable import TeamworkModel

/// What the task's declaration writes outside Swift is checked into the tree; `scripts/declare` writes it. These
/// fail when the declaration moved and the files did not (or the other way round).
@Suite struct DeclaredDocumentsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func thePhonesFieldListIsTheDeclarationsAsWritten() throws {
        let file = try String(contentsOf: Self.root.appending(path: "Sources/PhoneApp/Files/fields.js"), encoding: .utf8)
        #expect(file == TaskSchema.phoneModule, "Sources/PhoneApp/Files/fields.js is not the declaration's: run scripts/declare")
        #expect(file.contains(#""key": "duration_minutes""#))
    }

    @Test func theOpenAPITaskObjectIsTheDeclarations() throws {
        let document = try JSONSerialization.jsonObject(with: Data(contentsOf: Self.root.appending(path: "docs/openapi.json")))
        let written = try #require(
            ((((document as? NSDictionary)?["components"] as? NSDictionary)?["schemas"] as? NSDictionary)?["ChangePage"] as? NSDictionary)
                .flatMap { (($0["properties"] as? NSDictionary)?["tasks"] as? NSDictionary)?["items"] as? NSDictionary })
        let declared = try #require(try JSONSerialization.jsonObject(with: Data(TaskSchema.openAPITask.utf8)) as? NSDictionary)
        #expect(
            written.isEqual(to: declared as! [AnyHashable: Any]), "docs/openapi.json's task is not the declaration's: run scripts/declare")
        let keys = try #require((declared["properties"] as? NSDictionary)?.allKeys as? [String])
        #expect(Set(keys) == Set(TaskSchema.travelling.map(\.wireKey) + ["row_version"]))
    }

    /// The board's Details form names its fields after the columns, beside its own hidden ones.
    @Test func noColumnSetByNameIsNamedAsAFieldEveryBoardFormCarries() {
        #expect(Set(DeclaredValues.settable.map(\.name)).isDisjoint(with: ["csrf", "version", "back"]))
        #expect(!DeclaredValues.settable.isEmpty)
    }

    @Test func aValueSetByNameIsOneLineWithoutInvisibleCharacters() throws {
        var values = DeclaredValues()
        try values.set("reference", to: "  WO-1182 åäö  ")
        #expect(values.ordered.first?.value == .text("WO-1182 åäö"))
        for bad in ["a\nb", "a\u{2028}b", "a\u{202E}b", "a\u{200B}b", "a\u{85}b", "a\u{7F}b"] {
            #expect(throws: TeamworkError.self, "\(bad.unicodeScalars.map { String($0.value, radix: 16) })") {
                try values.set("reference", to: bad)
            }
        }
        #expect(throws: TeamworkError.self) { try values.set("reference", to: String(repeating: "å", count: 51)) }
        try values.set("reference", to: String(repeating: "å", count: 50))
        try values.set("reference", to: " ")
        #expect(values.ordered.first?.value == .text(nil))
    }

    /// A wire key read back by the protocol's decoder, then written by an encoder that converts to snake_case, is
    /// itself again: the page's keys are the declaration's whichever way they are spelled in between.
    @Test func everyWireKeySurvivesTheProtocolsKeyConversions() throws {
        for column in TaskSchema.travelling {
            let property = TeamworkJSON.propertyName(column.wireKey)
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            let written = try encoder.encode(KeyedProbe(values: [property: 1]))
            #expect(String(decoding: written, as: UTF8.self) == #"{"\#(column.wireKey)":1}"#, "\(column.wireKey) → \(property)")
        }
    }
}

/// Encodes its entries under keys, as a type with those properties would (so key strategies apply).
private struct KeyedProbe: Encodable {
    var values: [String: Int]
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: TeamworkJSON.Key.self)
        for (key, value) in values { try container.encode(value, forKey: .init(key)) }
    }
}
