import Foundation
import TeamworkModel
import Testing

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

    /// Seen failing before: any TCP host defaulted to `prefer`, which someone on
    /// the path can talk down to plain text by refusing TLS.
    @Test func tlsIsRequiredOverTheNetworkAndPreferredOnLoopbackUnlessSaidOtherwise() throws {
        #expect(try DatabaseURL(parsing: "postgres://u@db.example/d").tlsMode == .require)
        #expect(try DatabaseURL(parsing: "postgres://u@10.0.0.5/d").tlsMode == .require)
        #expect(try DatabaseURL(parsing: "postgres://u@127.attacker.example/d").tlsMode == .require)
        #expect(try DatabaseURL(parsing: "postgres://u@localhost/d").tlsMode == .prefer)
        #expect(try DatabaseURL(parsing: "postgres://u@127.0.0.1/d").tlsMode == .prefer)
        #expect(try DatabaseURL(parsing: "postgres://u@db.example/d?sslmode=prefer").tlsMode == .prefer)
        #expect(try DatabaseURL(parsing: "postgres://u@h/d?sslmode=disable").tlsMode == .disable)
        #expect(try DatabaseURL(parsing: "postgres://u@h/d?sslmode=verify-full").tlsMode == .require)
    }

    @Test func aRootCertificateIsTrustedInsteadOfTheSystemsAndMustBeReadable() throws {
        let ca = FileManager.default.temporaryDirectory.appending(path: "ca-\(UUID().uuidString).pem").path
        try Data("-----BEGIN CERTIFICATE-----\n".utf8).write(to: URL(fileURLWithPath: ca))
        defer { try? FileManager.default.removeItem(atPath: ca) }
        let url = try DatabaseURL(parsing: "postgres://u@db.example/d?sslmode=verify-full&sslrootcert=\(ca)")
        #expect(url.rootCertificate == ca)
        #expect(try DatabaseURL(parsing: url.connectionString) == url)
        #expect(throws: TeamworkError.self) { try DatabaseURL(parsing: "postgres://u@db.example/d?sslrootcert=/nonexistent/ca.pem") }
    }

    /// Issue 65: refused before ("database URL must look like postgres://user:password@host:5432/database").
    @Test func severalHostsAreTriedInOrderAndTheTargetSessionIsKept() throws {
        let url = try DatabaseURL(
            parsing: "postgres://max:pw@db1.example:5432,db2.example:5433,[fd00::7]/teamwork?target_session_attrs=read-write")
        #expect(
            url.endpoints == [
                .tcp(host: "db1.example", port: 5432), .tcp(host: "db2.example", port: 5433), .tcp(host: "fd00::7", port: 5432),
            ])
        #expect(url.targetSession == .readWrite && url.tlsMode == .require && url.username == "max" && url.database == "teamwork")
        #expect(try DatabaseURL(parsing: url.connectionString) == url)
        #expect(url.displayString == "max@db1.example:5432,db2.example:5433,[fd00::7]:5432/teamwork")
        let local = try DatabaseURL(parsing: "postgres://u@127.0.0.1:5432,localhost:5433/d?target_session_attrs=primary")
        #expect(local.tlsMode == .prefer && local.targetSession == .primary)
        let sockets = try DatabaseURL(parsing: "postgres://u@/d?host=/run/a,/run/b&port=5432,5433")
        #expect(sockets.endpoints == [.unixSocket(path: "/run/a/.s.PGSQL.5432"), .unixSocket(path: "/run/b/.s.PGSQL.5433")])
        #expect(try DatabaseURL(parsing: sockets.connectionString) == sockets)
        // A port per host, in the query; and the query's hosts win over the URI's, as in libpq.
        let ported = try DatabaseURL(parsing: "postgres://u@h1,h2/d?port=5432,5433")
        #expect(ported.endpoints == [.tcp(host: "h1", port: 5432), .tcp(host: "h2", port: 5433)])
        #expect(
            try DatabaseURL(parsing: "postgres://u@ignored/d?host=h1,h2").endpoints == [
                .tcp(host: "h1", port: 5432), .tcp(host: "h2", port: 5432),
            ])
    }

    @Test(arguments: [
        "postgres://u@h1,h2/d?target_session_attrs=standby", "postgres://u@h1:x,h2/d", "postgres://u@h1,,h2/d",
        "postgres://u@/d?host=/a,/b&port=1,2,3", "postgres://u@/d?host=/run/a,db.example", "postgres://u@h1,h2/d?port=1,2,3",
    ])
    func aHostListThatCannotBeFollowedIsAConfigurationError(_ text: String) {
        #expect(throws: TeamworkError.self) { try DatabaseURL(parsing: text) }
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
