import Foundation
import TeamworkFormats
import TeamworkModel
import TeamworkTestSupport
import Testing

/// The pairing link's QR code read back by a decoder nobody here wrote (zxing-cpp from PyPI,
/// scripts/ensure-dependencies installs it), at every version the links need and beyond.
@Suite("QR codes")
struct QRCodeTests {
    @Test(arguments: [
        "http://127.0.0.1:18080/app/pair?code=" + String(repeating: "A", count: 43),
        "https://teamwork.example/app/pair?code=Yc0_a-9ZzQe1bX7LmKpR2sTuVwXy3AbCdEfGhIjKlMn",
        "a", String(repeating: "x", count: 40), String(repeating: "é", count: 100), String(repeating: "z", count: 213),
    ])
    func aDecoderNobodyHereWroteReadsBackTheText(_ text: String) async throws {
        let code = try QRCode(text)
        #expect(code.size == 17 + 4 * code.version)
        #expect(try await QRReader.read(QRReader.rows(code)) == text)
    }

    @Test func textLongerThanVersionTenHoldsIsRefused() {
        #expect(throws: QRCode.Problem.tooLong(214)) { _ = try QRCode(String(repeating: "z", count: 214)) }
    }
}
