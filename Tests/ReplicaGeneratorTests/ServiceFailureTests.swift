import CentralStore
import Foundation
import LocalPostgres
import ReplicaGenerator
import Testing
import TeamworkModel
import TeamworkTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The built `teamwork-service` when something around it fails: it is either
/// doing its job or it has exited non-zero with one line saying why.
@Suite("teamwork-service: failures around it")
struct ServiceFailureTests {
    /// Ends the process if a test left it running, so a failing test never hangs the suite.
    static func ensureEnded(_ service: ServiceProcess) async throws {
        if try await service.exitStatus(within: .zero) == nil, service.isRunning {
            service.signal(SIGKILL)
            _ = try await service.exitStatus(within: .seconds(5))
        }
    }

    @Test func runExitsNonZeroWithinTenSecondsNamingThePortWhenItIsTaken() async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "svc-port-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let (port, descriptor) = ServiceProcess.silentPort()
            defer { close(descriptor) }
            let service = ServiceProcess(["run", "--database-url", url.connectionString, "--replicas", folder.path,
                                          "--port", String(port), "--sweep", "0.5"], port: port, log: folder.path + ".log")
            defer { unlink(service.log) }
            try await service.start(waitForPort: false)
            let status = try await service.exitStatus(within: .seconds(10))
            try await Self.ensureEnded(service)
            #expect(status != nil && status != 0, "still running 10 s after failing to bind: \(service.logText)")
            #expect(service.logText.contains("\(port)"), "the log names the port: \(service.logText)")
            #expect(!service.logText.contains("Assertion failed") && !service.logText.contains("Fatal error"))
        }
    }

    @Test(arguments: ["run", "replicate", "listen"])
    func aLongRunningCommandEndsWithinTenSecondsOfSigtermWhilePostgreSQLIsDown(command: String) async throws {
        let directory = URL(fileURLWithPath: "/tmp/tw-down-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        chmod(directory.path, 0o755)
        defer { try? FileManager.default.removeItem(at: directory) }
        let cluster = LocalCluster(.init(directory: directory.appending(path: "pg")))
        _ = try cluster.ensureRunning()
        defer { try? cluster.stop() }
        let url = DatabaseURL(endpoint: .unixSocket(path: cluster.socketPath), username: LocalCluster.superuser, database: "postgres")
        try await CentralStore.withStore(url) { try await Migrator().migrate($0) }
        let folder = directory.appending(path: "replicas")
        var arguments = [command, "--database-url", url.connectionString, "--replicas", folder.path, "--sweep", "0.5"]
        let port = ServiceProcess.freePort()
        if command == "run" { arguments += ["--port", String(port)] }
        let service = ServiceProcess(arguments, port: command == "run" ? port : nil, log: directory.path + "/service.log")
        try await service.start()
        try await Task.sleep(for: .seconds(1))
        try cluster.stop()
        try await Task.sleep(for: .seconds(3))
        #expect(service.isRunning, "PostgreSQL away is survived: \(service.logText)")
        service.signal(SIGTERM)
        let status = try await service.exitStatus(within: .seconds(10))
        try await Self.ensureEnded(service)
        #expect(status == 0, "SIGTERM with PostgreSQL down: a clean exit within 10 s, got \(String(describing: status)): \(service.logText)")
    }

    @Test(arguments: ["run", "replicate", "listen", "serve"])
    func aLongRunningCommandExitsWithOneLineWhenItsReplicaFolderCannotBeMade(command: String) async throws {
        try await TestDatabase.withFresh { url in
            let blocker = FileManager.default.temporaryDirectory.appending(path: "svc-file-\(UUID().uuidString)")
            FileManager.default.createFile(atPath: blocker.path, contents: Data("not a folder".utf8))
            defer { unlink(blocker.path) }
            var arguments = [command, "--database-url", url.connectionString, "--replicas", blocker.appending(path: "replicas").path]
            if command == "run" || command == "serve" { arguments += ["--port", String(ServiceProcess.freePort())] }
            let service = ServiceProcess(arguments, log: blocker.path + ".log")
            defer { unlink(service.log) }
            try await service.start()
            let status = try await service.exitStatus(within: .seconds(10))
            try await Self.ensureEnded(service)
            #expect(status == TeamworkError.Code.configuration.exitStatus, "\(service.logText)")
            let lines = service.logText.split(separator: "\n")
            #expect(lines.contains { $0.contains("replica folder") && $0.contains(blocker.path) }, "\(service.logText)")
        }
    }
}
