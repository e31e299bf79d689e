import CentralStore
import Foundation
import LocalPostgres
import Testing

/// Runs the built `teamwork-manager` binary, as a user would.
public struct ManagerTool: Sendable {
    /// What one run printed and how it ended.
    public typealias Run = Tool.Run

    /// The database every run talks to, unless `environment` overrides it.
    public var databaseURL: String?
    public var environment: [String: String]

    public init(databaseURL: String?, environment: [String: String] = [:]) {
        self.databaseURL = databaseURL
        self.environment = environment
    }

    public init(_ url: DatabaseURL) {
        self.init(databaseURL: url.connectionString)
    }

    /// The folder with the built executables: TEAMWORK_BIN_DIR (set by scripts/test),
    /// else this checkout's .build/debug.
    public static var binDirectory: URL {
        if let explicit = ProcessInfo.processInfo.environment["TEAMWORK_BIN_DIR"], !explicit.isEmpty {
            return URL(fileURLWithPath: explicit)
        }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appending(path: ".build/debug")
    }

    /// Runs `teamwork-manager arguments...` to completion.
    @discardableResult
    public func callAsFunction(_ arguments: String...) async throws -> Run {
        try await run(arguments)
    }

    /// Runs `teamwork-manager arguments...`, which must succeed (an issue is recorded otherwise); what it printed.
    @discardableResult
    public func ok(_ arguments: String..., sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        let run = try await run(arguments)
        #expect(run.status == 0, "teamwork-manager \(arguments.joined(separator: " ")): \(run.stderr)", sourceLocation: sourceLocation)
        return run.stdout
    }

    public func run(_ arguments: [String]) async throws -> Run {
        var variables: [String: String?] = ["TEAMWORK_DATABASE_URL": databaseURL, "TEAMWORK_ACTOR": nil]
        for (key, value) in environment { variables[key] = value }
        return try await Tool.manager.run(arguments, environment: variables)
    }
}

extension ManagerTool {
    /// Runs `body` with a manager tool on the local default (no database URL) in a
    /// TEAMWORK_HOME of its own under /tmp (short enough for PostgreSQL's socket path);
    /// the cluster is stopped and the folder removed afterwards.
    public static func withLocalDefault<R>(_ name: String, _ body: (ManagerTool, URL) async throws -> R) async throws -> R {
        let home = URL(fileURLWithPath: "/tmp").appending(path: "tw-\(name)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        chmod(home.path, 0o755)
        let tool = ManagerTool(databaseURL: nil, environment: ["TEAMWORK_HOME": home.path, "TEAMWORK_DATABASE_URL": ""])
        return try await withCleanup {
            try await body(tool, home)
        } cleanup: {
            _ = try? await tool("db", "stop-local")
            try? FileManager.default.removeItem(at: home)
        }
    }
}
