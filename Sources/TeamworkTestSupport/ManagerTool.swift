import CentralStore
import Foundation
import LocalPostgres

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
    public func callAsFunction(_ arguments: String...) throws -> Run {
        try run(arguments)
    }

    public func run(_ arguments: [String]) throws -> Run {
        var variables: [String: String?] = ["TEAMWORK_DATABASE_URL": databaseURL, "TEAMWORK_ACTOR": nil]
        for (key, value) in environment { variables[key] = value }
        return try Tool.manager.run(arguments, environment: variables)
    }
}
