import CentralStore
import Foundation
import LocalPostgres

/// Runs the built `teamwork-manager` binary, as a user would.
public struct ManagerTool: Sendable {
    /// What one run printed and how it ended.
    public struct Run: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String

        /// Standard error's lines, without the trailing empty one.
        public var errorLines: [String] { stderr.split(separator: "\n").map(String.init) }
    }

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
    public func callAsFunction(_ arguments: String...) throws -> Run {
        try run(arguments)
    }

    public func run(_ arguments: [String]) throws -> Run {
        var env = ProcessInfo.processInfo.environment
        env["TEAMWORK_DATABASE_URL"] = databaseURL
        env["TEAMWORK_ACTOR"] = nil
        for (key, value) in environment { env[key] = value }
        let scratch = FileManager.default.temporaryDirectory.appending(path: "teamwork-run-\(UUID().uuidString)")
        let out = scratch.path + ".out"
        let err = scratch.path + ".err"
        defer {
            unlink(out)
            unlink(err)
        }
        let executable = Self.binDirectory.appending(path: "teamwork-manager").path
        let status = try ChildProcess.run([executable] + arguments, environment: env, standardOutput: out, standardError: err)
        return Run(
            status: status,
            stdout: String(decoding: FileManager.default.contents(atPath: out) ?? Data(), as: UTF8.self),
            stderr: String(decoding: FileManager.default.contents(atPath: err) ?? Data(), as: UTF8.self)
        )
    }
}
