import Foundation
import TeamworkModel
import Testing

@Suite("Field validation")
struct ValidationTests {
    @Test(arguments: ["", "   ", "\n\t"])
    func blankNamesAreRefused(_ name: String) {
        #expect(throws: TeamworkError.invalid("first name must not be empty")) {
            try NewPerson(firstName: name, lastName: "Li", email: "a@b.co", role: .worker)
        }
    }

    @Test func namesAreKeptExactlyAsTyped() throws {
        let name = "  Zoë 'Q' \"Bobby\"; DROP TABLE people;-- 🚧 "
        let person = try NewPerson(firstName: name, lastName: "x", email: "z@b.co", role: .worker)
        #expect(person.firstName == name)
    }

    @Test func namesLongerThanTheLimitAreRefused() {
        let long = String(repeating: "a", count: Validate.maximumNameLength + 1)
        #expect(throws: TeamworkError.self) { try Validate.name(long, field: "title") }
        #expect(throws: Never.self) { try Validate.name(String(long.dropFirst()), field: "title") }
    }

    @Test(arguments: ["plain", "a@", "@b.co", "a b@c.co", "a@@b.co", "a@b", "a@.b.co", "a@b.co."])
    func malformedEmailsAreRefused(_ email: String) {
        #expect(throws: TeamworkError.invalid("email is not a valid address")) { try Validate.email(email) }
    }

    @Test(arguments: ["ann@example.org", "ann.o+tag@sub.example.co.uk"])
    func wellFormedEmailsPass(_ email: String) throws {
        #expect(try Validate.email(email) == email)
    }

    @Test(arguments: ["Red", "-red", "red-", "red team", "", String(repeating: "a", count: 41), "röd"])
    func badSlugsAreRefused(_ slug: String) {
        #expect(throws: TeamworkError.self) { try Validate.slug(slug) }
    }

    @Test(arguments: ["red", "red-team-2", "a", String(repeating: "a", count: 40)])
    func goodSlugsPass(_ slug: String) throws {
        #expect(try Validate.slug(slug) == slug)
    }

    @Test func coloursAreNormalisedToLowerCase() throws {
        #expect(try Validate.color("#D03030") == "#d03030")
        #expect(throws: TeamworkError.self) { try Validate.color("d03030") }
        #expect(throws: TeamworkError.self) { try Validate.color("#d0303g") }
    }

    @Test(arguments: [(-90.0001, 0.0), (90.5, 0.0), (0.0, 180.01), (0.0, -181.0), (Double.nan, 0.0), (0.0, Double.infinity)])
    func outOfRangeCoordinatesAreRefused(_ latitude: Double, _ longitude: Double) {
        #expect(throws: TeamworkError.self) { try NewLocation(latitude: latitude, longitude: longitude) }
    }

    @Test func boundaryCoordinatesAreAccepted() throws {
        _ = try NewLocation(latitude: -90, longitude: 180)
        _ = try NewLocation(latitude: 90, longitude: -180)
    }

    @Test func aTaskNeedsATeamOrAnAssignee() throws {
        #expect(throws: TeamworkError.self) { try Assignment(teamID: nil, assigneeID: nil) }
        _ = try Assignment(teamID: 1, assigneeID: nil)
        _ = try Assignment(teamID: nil, assigneeID: 2)
    }

    @Test func enumParsingNamesTheAcceptedValues() {
        #expect(throws: TeamworkError.invalid("priority must be one of: low, normal, high, urgent")) {
            try Priority.parse("critical")
        }
    }

    @Test func enumParsingAcceptsCaseAndDashVariants() throws {
        #expect(try TaskStatus.parse("in-progress") == .inProgress)
        #expect(try Role.parse(" Manager ") == .manager)
    }

    @Test func prioritiesOrderFromLowToUrgent() {
        #expect(Priority.allCases.sorted() == [.low, .normal, .high, .urgent])
    }
}
