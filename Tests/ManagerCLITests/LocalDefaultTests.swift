import Foundation
import LocalPostgres
import TeamworkTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// With no database URL, the tool creates, starts and reuses a private cluster.
@Suite("teamwork-manager local default")
struct LocalDefaultTests {
    /// A child (pg_ctl's server, a service under test, wrk) gets its three standard
    /// descriptors and nothing else the parent has open, close-on-exec or not.
    @Test func aSpawnedChildInheritsNoDescriptorButItsStandardThree() async throws {
        let held = open("/dev/null", O_RDONLY)  // no O_CLOEXEC: inherited unless closed on purpose
        #expect(held > 2)
        defer { close(held) }
        let output = URL(fileURLWithPath: NSTemporaryDirectory()).appending(path: "fds-\(UUID().uuidString)").path
        defer { unlink(output) }
        #expect(try await ChildProcess.finish(["/bin/sh", "-c", "ls /proc/$$/fd"], standardOutput: output, standardError: output) == 0)
        let listed = Set(try String(contentsOfFile: output, encoding: .utf8).split(whereSeparator: \.isWhitespace).compactMap { Int32($0) })
        #expect(listed.isSubset(of: [0, 1, 2, 10]), "the shell saw \(listed.sorted()); the parent held \(held)")
        #expect(!listed.contains(held))
    }

    @Test func withNoDatabaseURLAPrivateClusterIsCreatedThenReused() async throws {
        try await ManagerTool.withLocalDefault("local") { tool, home in
            let first = try await tool("team", "add", "red", "--name", "Red")
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.stderr.contains("created and started the local PostgreSQL in \(home.path)/postgres"))

            let second = try await tool("team", "list")
            #expect(second.status == 0)
            #expect(second.stderr.isEmpty, "a running cluster is reused silently")
            #expect(second.stdout.contains("red"))

            let socket = home.appending(path: "postgres/run/.s.PGSQL.5432").path
            #expect(FileManager.default.fileExists(atPath: socket))
            if geteuid() == 0 {
                let owner = try FileManager.default.attributesOfItem(atPath: home.appending(path: "postgres/data").path)[.ownerAccountName]
                #expect(owner as? String == "postgres", "as root the server runs as an unprivileged user")
            }

            #expect(try await tool("db", "stop-local").status == 0)
            #expect(!FileManager.default.fileExists(atPath: socket))
            let restarted = try await tool("team", "list")
            #expect(restarted.status == 0)
            #expect(restarted.stderr.contains("started the local PostgreSQL"))
            #expect(restarted.stdout.contains("red"), "data survives a restart")
        }
    }

    /// A newcomer's first contact: `db status` on a new machine shows a ready database (seen before: exit 78,
    /// "13 pending migration(s)", no hint); options go before the subcommand too, as operations.md writes them;
    /// stopping what does not run says so.
    @Test func aFirstDbStatusOnANewMachineShowsAReadyDatabaseAndGlobalOptionsMayComeFirst() async throws {
        try await ManagerTool.withLocalDefault("first") { tool, home in
            let status = try await tool("db", "status")
            #expect(status.status == 0, "\(status.stderr)")
            #expect(!status.stdout.contains("pending"), "\(status.stdout)")

            let socket = home.appending(path: "postgres/run").path
            let url = "postgres://postgres@/teamwork?host=\(socket)"
            let first = try await tool("--database-url", url, "db", "status")
            #expect(first.status == 0 && first.stdout.contains("database: "), "\(first.stderr)")
            let equals = try await tool("--database-url=\(url)", "--actor", "nobody@example.org", "db", "migrate")
            #expect(equals.status == 0 && equals.stdout.contains("up to date"), "\(equals.stderr)")

            #expect(try await tool("db", "stop-local").stdout.hasPrefix("Stopped"))
            let again = try await tool("db", "stop-local")
            #expect(again.status == 0 && again.stdout.contains("was not running"), "\(again.stdout)")
        }
    }
}
