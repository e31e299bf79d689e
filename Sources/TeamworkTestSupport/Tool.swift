import Foundation
import LocalPostgres
import TeamworkModel

#if canImport(Glibc)
    import Glibc
#endif

/// The one way tests run a built executable to completion, as a user would:
/// `teamwork-manager`, `teamwork-worker`, or a one-off `teamwork-service`
/// command (`verify`, `replicate --once`). Long-running services go through
/// ``ServiceProcess``.
public enum Tool: String, Sendable {
    case manager = "teamwork-manager"
    case worker = "teamwork-worker"
    case service = "teamwork-service"

    /// What one run printed and how it ended.
    public struct Run: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String

        public init(status: Int32, stdout: String, stderr: String) {
            self.status = status
            self.stdout = stdout
            self.stderr = stderr
        }

        /// Standard error's lines, without the trailing empty one.
        public var errorLines: [String] { stderr.split(separator: "\n").map(String.init) }
    }

    /// The built executable (see ``ManagerTool/binDirectory``).
    public var path: String { ManagerTool.binDirectory.appending(path: rawValue).path }

    /// Runs `<tool> arguments...` to completion. `environment` adds variables to
    /// (or, with `nil`, removes them from) the test process's; `input` is its standard input.
    /// The wait is on a Dispatch thread: tests run in parallel on Swift's cooperative threads
    /// (one per core), and a few tests waiting for processes there would stall every other test
    /// (seen: an answer the service gave in time, read by the test 15 s later).
    public func run(_ arguments: [String], environment: [String: String?] = [:], input: String? = nil) async throws -> Run {
        try await blockingWork { try runBlocking(arguments, environment: environment, input: input) }
    }

    /// ``run(_:environment:input:)`` holding the calling thread until the tool ends: only for a
    /// thread of the test's own, never from async code.
    public func runBlocking(_ arguments: [String], environment: [String: String?] = [:], input: String? = nil) throws -> Run {
        var variables = ProcessInfo.processInfo.environment
        for (key, value) in environment { variables[key] = value }
        let scratch = FileManager.default.temporaryDirectory.appending(path: "teamwork-run-\(UUID().uuidString)").path
        let (out, err, given) = (scratch + ".out", scratch + ".err", scratch + ".in")
        defer {
            unlink(out)
            unlink(err)
            unlink(given)
        }
        var standardInput = "/dev/null"
        if let input {
            standardInput = given
            try Data(input.utf8).write(to: URL(fileURLWithPath: given))
        }
        let status = try ChildProcess.run(
            [path] + arguments, environment: variables, standardInput: standardInput,
            standardOutput: out, standardError: err)
        return Run(
            status: status,
            stdout: String(decoding: FileManager.default.contents(atPath: out) ?? Data(), as: UTF8.self),
            stderr: String(decoding: FileManager.default.contents(atPath: err) ?? Data(), as: UTF8.self))
    }
}

/// Runs the built `teamwork-worker` with its device in `home`, as a worker would.
public enum WorkerTool {
    @discardableResult
    public static func run(_ home: URL, _ arguments: String...) async throws -> Tool.Run {
        try await run(home, arguments)
    }

    @discardableResult
    public static func run(
        _ home: URL, _ arguments: [String], environment: [String: String] = [:],
        input: String? = nil
    ) async throws -> Tool.Run {
        try await Tool.worker.run(arguments, environment: variables(home, environment), input: input)
    }

    /// ``run(_:_:environment:input:)`` holding the calling thread: only for a thread of the test's own.
    @discardableResult
    public static func runBlocking(_ home: URL, _ arguments: [String]) throws -> Tool.Run {
        try Tool.worker.runBlocking(arguments, environment: variables(home, [:]))
    }

    /// The device in `home`, no token from the test's own environment, and `extra`.
    private static func variables(_ home: URL, _ extra: [String: String]) -> [String: String?] {
        var variables: [String: String?] = ["TEAMWORK_WORKER_HOME": home.path, "TEAMWORK_TOKEN": nil]
        for (key, value) in extra { variables[key] = value }
        return variables
    }
}

extension Tool.Run {
    /// Runs a Python 3 script (`python3 -c`) with `arguments`, for what Swift
    /// has no handy tool for in a test (a pseudo-terminal).
    public static func python(_ script: String, arguments: [String], environment: [String: String?] = [:]) async throws -> Tool.Run {
        try await blockingWork { try pythonBlocking(script, arguments: arguments, environment: environment) }
    }

    private static func pythonBlocking(_ script: String, arguments: [String], environment: [String: String?]) throws -> Tool.Run {
        var variables = ProcessInfo.processInfo.environment
        for (key, value) in environment { variables[key] = value }
        let scratch = FileManager.default.temporaryDirectory.appending(path: "teamwork-py-\(UUID().uuidString)").path
        defer {
            unlink(scratch + ".out")
            unlink(scratch + ".err")
        }
        let python =
            ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/bin/python3"
        let status = try ChildProcess.run(
            [python, "-c", script] + arguments, environment: variables,
            standardOutput: scratch + ".out", standardError: scratch + ".err")
        return Tool.Run(
            status: status,
            stdout: String(decoding: FileManager.default.contents(atPath: scratch + ".out") ?? Data(), as: UTF8.self),
            stderr: String(decoding: FileManager.default.contents(atPath: scratch + ".err") ?? Data(), as: UTF8.self))
    }
}

extension ChildProcess {
    /// ``ChildProcess/run(_:environment:standardInput:standardOutput:standardError:)`` waited for on
    /// a Dispatch thread, for async tests: a wait on a cooperative thread stalls the other tests.
    public static func finish(
        _ arguments: [String], environment: [String: String]? = nil,
        standardOutput: String, standardError: String
    ) async throws -> Int32 {
        try await blockingWork {
            try ChildProcess.run(arguments, environment: environment, standardOutput: standardOutput, standardError: standardError)
        }
    }
}
