import Foundation
import TeamworkModel
import Testing

@Suite("ISO 8601 dates")
struct ISODateTests {
    @Test func aDateAloneMeansTheEndOfThatDayUTC() throws {
        let date = try ISODate.parse("2026-12-01")
        #expect(ISODate.format(date) == "2026-12-01T23:59:59Z")
    }

    @Test(arguments: [
        ("2026-12-01T09:30:00Z", "2026-12-01T09:30:00Z"),
        ("2026-12-01T09:30", "2026-12-01T09:30:00Z"),
        ("2026-12-01 09:30:15", "2026-12-01T09:30:15Z"),
        ("2026-12-01T09:30:00+02:00", "2026-12-01T07:30:00Z"),
        ("2026-12-01T23:30:00-01:00", "2026-12-02T00:30:00Z"),
        ("2026-12-01T09:30:00.250Z", "2026-12-01T09:30:00Z"),
    ])
    func dateTimesAreReadWithTheirOffset(_ text: String, _ expected: String) throws {
        #expect(ISODate.format(try ISODate.parse(text)) == expected)
    }

    @Test func fractionalSecondsAreKept() throws {
        let date = try ISODate.parse("2026-12-01T09:30:00.250Z")
        let whole = try ISODate.parse("2026-12-01T09:30:00Z")
        #expect(abs(date.timeIntervalSince(whole) - 0.25) < 0.0001)
    }

    @Test(arguments: [
        "", "tomorrow", "2026-13-01", "2026-02-30", "2026-12-1", "2026/12/01", "2026-12-01T25:00",
        "2026-12-01T09:30:00X", "2026-12-01T09:30:00Zjunk", "12/01/2026",
    ])
    func malformedDatesAreRefusedWithTheFieldName(_ text: String) {
        #expect(throws: TeamworkError.invalid("due must be an ISO 8601 date like 2026-12-01 or 2026-12-01T09:30:00Z")) {
            try ISODate.parse(text, field: "due")
        }
    }
}
