import Foundation
import Logging
import TeamworkModel
import Testing

@testable import ServiceCLI

/// Text from the field or the master (a person's name in a database error, a
/// change id) reaches the service's logs: it must not drive the terminal of
/// whoever reads them, nor forge a line.
@Suite("Service logs: no control characters")
struct ServiceLogSafetyTests {
    static let hostile = "Ann\u{1B}]0;owned\u{07}\n2026-01-01 info forged line\u{9B}2J\u{202E}evil\u{7F}"

    @Test func aTextLogLineCarriesNoControlCharacterAndStaysOneLine() {
        let event = LogEvent(
            level: .error, message: "refused \(Self.hostile)", metadata: ["name": .string(Self.hostile)],
            source: "test", file: #fileID, function: #function, line: #line)
        let safe = TextLogHandler.safe(event)
        let texts = [safe.message.description, safe.metadata?["name"]?.description ?? ""]
        for text in texts {
            #expect(
                !text.unicodeScalars.contains {
                    $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || (0x202A...0x202E).contains($0.value)
                },
                "\(text.debugDescription)")
            #expect(!text.contains("\n"))
        }
        #expect(safe.message.description.contains("forged line"), "the text is kept, made harmless")
    }

    @Test func printedJSONEscapesEveryUnsafeCharacterAndMeansTheSameText() throws {
        let json = try JSONEncoder().encode(["note": Self.hostile])
        let printed = TerminalText.escapedJSON(json)
        let text = String(decoding: printed, as: UTF8.self)
        #expect(
            !text.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || (0x202A...0x202E).contains($0.value) })
        #expect(text.contains("\\u009b") && text.contains("\\u202e") && text.contains("\\u007f"))
        #expect(try JSONDecoder().decode([String: String].self, from: printed) == ["note": Self.hostile])
    }
}
