import Testing
import TeamworkModel
@testable import CentralStore

@Suite("Database URLs")
struct DatabaseURLTests {
    @Test func tcpURLsCarryUserPasswordHostPortAndDatabase() throws {
        let url = try DatabaseURL(parsing: "postgres://max:p%40ss@db.example:6543/teamwork?sslmode=require")
        #expect(url.endpoint == .tcp(host: "db.example", port: 6543))
        #expect(url.username == "max" && url.password == "p@ss" && url.database == "teamwork" && url.tlsMode == .require)
        #expect(!url.displayString.contains("p@ss"))
    }

    @Test func aHostQueryWithAPathMeansAUnixSocket() throws {
        let url = try DatabaseURL(parsing: "postgresql://postgres@/teamwork?host=/var/run/postgresql&port=5433")
        #expect(url.endpoint == .unixSocket(path: "/var/run/postgresql/.s.PGSQL.5433"))
        #expect(url.tlsMode == .disable)
    }

    @Test func tlsIsPreferredOverTCPUnlessDisabled() throws {
        #expect(try DatabaseURL(parsing: "postgres://u@h/d").tlsMode == .prefer)
        #expect(try DatabaseURL(parsing: "postgres://u@h/d?sslmode=disable").tlsMode == .disable)
    }

    @Test(arguments: ["mysql://u@h/d", "not a url", "postgres:///d", "postgres://u@h/d?sslmode=sometimes"])
    func malformedURLsAreConfigurationErrors(_ text: String) {
        #expect(throws: TeamworkError.self) { try DatabaseURL(parsing: text) }
    }

    @Test(arguments: [
        "postgres://max:s3cr%2Ft@db.example:6543/teamwork?sslmode=require",
        "postgres://postgres@/teamwork?host=/tmp/cluster/run&port=5432",
    ])
    func theConnectionStringParsesBackToTheSamePlace(_ text: String) throws {
        let url = try DatabaseURL(parsing: text)
        #expect(try DatabaseURL(parsing: url.connectionString) == url)
    }
}
