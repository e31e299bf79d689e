import TeamworkModel
import Testing

@Suite("A token secret's shape")
struct TokenSecretTests {
    static let body: String = String(repeating: "aZ09-_", count: 7) + "x"
    /// The body but its last character.
    static let most: String = String(body.dropLast())

    @Test func aGeneratedSecretAndBase64URLOfTheRightLengthAreWellFormed() {
        #expect(Self.body.utf8.count == 43)
        #expect(TokenSecret.isWellFormed(TokenSecret.generate()))
        #expect(TokenSecret.isWellFormed("tw_" + Self.body))
    }

    /// Look-alikes of a secret: a character short or over, another prefix, a byte outside base64url,
    /// letters and digits outside ASCII, an accent combined into 44 characters of the 46 bytes a secret has.
    static let lookAlikes: [String] = [
        "", "tw_", "tw_" + most, "tw_" + body + "x", "TW_" + body, "tx_" + body, "tw_" + most + "=", "tw_" + most + "+",
        "tw_" + most + " ", "tw_" + most + "é", "tw_" + most + "٣", "tw_" + String(most.dropLast(2)) + "e\u{301}",
        "tw_" + most + "\0", " tw_" + most,
    ]

    @Test(arguments: lookAlikes)
    func aLookAlikeIsNotWellFormed(_ text: String) {
        #expect(!TokenSecret.isWellFormed(text))
    }
}
