import TeamworkModel
import Testing

@Suite("A token secret's shape")
struct TokenSecretTests {
    static let body: String = String(repeating: "AZaz09-_", count: 5) + "Mm5"
    /// The body but its last character.
    static let most: String = String(body.dropLast())

    @Test func aGeneratedSecretAndBase64URLOfTheRightLengthAreWellFormed() {
        #expect(Self.body.utf8.count == 43)
        #expect(TokenSecret.isWellFormed(TokenSecret.generate()))
        #expect(TokenSecret.isWellFormed("tw_" + Self.body))
    }

    /// Look-alikes of a secret: a character short or over, another prefix, a byte just outside each
    /// range of base64url or from standard base64, letters and digits outside ASCII and an accent
    /// combined in the 46 bytes a secret has, a NUL, a space before it.
    static let lookAlikes: [String] =
        [
            "", "tw_", "tw_" + most, "tw_" + body + "x", "TW_" + body, "tx_" + body, "tw_" + most + "\0", " tw_" + most,
            "tw_" + String(most.dropLast()) + "é", "tw_" + String(most.dropLast()) + "٣", "tw_" + String(most.dropLast(2)) + "e\u{301}",
        ] + ["=", "+", "/", " ", ":", "@", "[", "`", "{", ".", "\u{7F}"].map { "tw_" + most + $0 }

    @Test(arguments: lookAlikes)
    func aLookAlikeIsNotWellFormed(_ text: String) {
        #expect(!TokenSecret.isWellFormed(text))
    }
}
