import Foundation
import LocalPostgres
import TeamworkModel

#if canImport(Glibc)
    import Glibc
#endif

/// A built `teamwork-service` running as a child process, for end-to-end tests.
/// `start()` runs it (and waits for its port when it has one); `stop()` sends
/// SIGTERM and returns the exit status; the log goes to `log`.
public final class ServiceProcess: @unchecked Sendable {
    public var arguments: [String]
    /// The HTTP port, for `serve` and `run`.
    public let port: Int?
    public let log: String
    /// Variables added to (or, with `nil`, removed from) the test process's environment.
    public var environment: [String: String?] = [:]
    public private(set) var pid: pid_t = 0

    /// `teamwork-service <arguments>`; pass `port` when the command serves HTTP on it.
    public init(_ arguments: [String], port: Int? = nil, log: String) {
        self.arguments = [Tool.service.path] + arguments
        self.port = port
        self.log = log
    }

    /// `teamwork-service run` (generator, listener, endpoint) on a free port, sweeping every `sweep` seconds.
    public static func run(databaseURL: String, replicas: URL, log: String, sweep: String = "0.5") -> ServiceProcess {
        let port = freePort()
        return ServiceProcess(
            [
                "run", "--database-url", databaseURL, "--replicas", replicas.path, "--port", String(port),
                "--sweep", sweep,
            ], port: port, log: log)
    }

    /// `teamwork-service serve` on a free port.
    public static func serve(databaseURL: String, replicas: URL) -> ServiceProcess {
        let port = freePort()
        return ServiceProcess(
            ["serve", "--database-url", databaseURL, "--replicas", replicas.path, "--port", String(port)],
            port: port, log: replicas.path + ".server.log")
    }

    public var url: String { "http://127.0.0.1:\(port ?? 0)" }

    /// `portWithin`: how long the port may take (a service that first creates its own PostgreSQL
    /// runs `initdb`, which takes well over 10 s on a loaded two-core machine).
    public func start(waitForPort: Bool = true, portWithin limit: Duration = .seconds(30)) async throws {
        var variables: [String: String]?
        if !environment.isEmpty {
            var merged = ProcessInfo.processInfo.environment
            for (name, value) in environment { merged[name] = value }
            variables = merged
        }
        pid = try ChildProcess.spawn(arguments, environment: variables, standardOutput: log, standardError: log)
        guard let port, waitForPort else { return }
        // A last look after the deadline too (a sleep of a busy test process can overrun it: a CI run
        // gave up on a service whose log said it was listening). 30 s: a debug build starting beside
        // a full run's load took about 10.
        if try await eventually(within: limit, every: .milliseconds(50), { Self.accepts(port) }) { return }
        // The log's end in the error itself: a test's folder (and the log in it) may be gone by the time anyone looks.
        throw TeamworkError(
            .internal, "teamwork-service did not start listening within \(limit); its log ends: \(String(logText.suffix(2_000)))")
    }

    /// Sends `signal` and waits for the process; returns its exit status (128 + n when killed by
    /// signal n). One that has not ended a minute later is killed (and says so: 128 + 9).
    @discardableResult
    public func stop(signal: Int32 = SIGTERM) async throws -> Int32 {
        guard pid > 0 else { return 0 }
        kill(pid, signal)
        if let status = try await exitStatus(within: .seconds(60)) { return status }
        kill(pid, SIGKILL)
        return try await exitStatus(within: .seconds(60)) ?? 128 + SIGKILL
    }

    /// For a `defer` (a test that failed before it stopped the service): SIGTERM now, reaped on
    /// a Dispatch thread, SIGKILL if it is still running 15 s later. Never blocks the caller.
    public func stopInBackground() {
        guard pid > 0 else { return }
        let child = pid
        pid = 0
        kill(child, SIGTERM)
        let reaped = Locked(false)
        DispatchQueue.global().async {
            _ = try? ChildProcess.wait(child)
            reaped.mutate { $0 = true }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + 15) {
            reaped.mutate { done in if !done { kill(child, SIGKILL) } }
        }
    }

    /// Waits up to `limit` for the process to end by itself: its exit status
    /// (as ``stop(signal:)`` reports it), or `nil` if it is still running then.
    public func exitStatus(within limit: Duration) async throws -> Int32? {
        guard pid > 0 else { return nil }
        guard let status = try await ChildProcess.wait(pid, within: limit) else { return nil }
        pid = 0
        return status
    }

    /// Sends `signal` without waiting; ``exitStatus(within:)`` then tells how it ended.
    public func signal(_ number: Int32) {
        if pid > 0 { kill(pid, number) }
    }

    /// Still running (not exited, not reaped).
    public var isRunning: Bool {
        guard pid > 0 else { return false }
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == 0
    }

    /// Every thread's stack of the running process (gdb, within a minute), for a test that found it
    /// stuck: where it waited is the evidence a flaky failure needs. Says why when there are none.
    /// gdb is waited for off the cooperative threads: a failure under load must not stall the other tests.
    public func threadStacks() async -> String {
        guard pid > 0, isRunning else { return "(not running)" }
        let pid = self.pid
        guard let (status, text) = try? await blockingWork({ Self.gdbStacks(of: pid) }) else { return "(no stacks: gdb did not run)" }
        return status == 0 ? text : "(no stacks: gdb ended with \(status): \(text.suffix(500)))"
    }

    /// gdb's `info threads` and every thread's stack of process `pid`, within a minute: its exit
    /// status and what it printed (its own words too). Blocks the calling thread.
    static func gdbStacks(of pid: pid_t) -> (status: Int32, text: String) {
        let output = FileManager.default.temporaryDirectory.appending(path: "stacks-\(pid)-\(UUID().uuidString)").path
        defer { unlink(output) }
        let arguments = ["/usr/bin/timeout", "60", "gdb", "-batch", "-p", String(pid), "-ex", "info threads", "-ex", "thread apply all bt"]
        let status = (try? ChildProcess.run(arguments, standardOutput: output, standardError: output)) ?? -1
        return (status, FileManager.default.contents(atPath: output).map { String(decoding: $0, as: UTF8.self) } ?? "")
    }

    public var logText: String { String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self) }

    /// What a failed test shows of the log: the crash, if the service crashed (Swift's backtrace
    /// puts the crashing thread first, then every other thread: a log's tail would show only the
    /// last ones), else the log's last `characters`.
    public func logTail(_ characters: Int = 3_000) -> String {
        let text = logText
        guard let crash = text.range(of: "💣") ?? text.range(of: "Fatal error") else { return String(text.suffix(characters)) }
        let before = text[..<crash.lowerBound].suffix(characters / 3)
        return String(before + text[crash.lowerBound...].prefix(characters * 2))
    }

    public static func freePort() -> Int {
        let (port, fd) = boundLoopbackSocket()
        close(fd)
        return port
    }

    /// A socket bound and listening on a free loopback port that never accepts:
    /// connections open (the kernel completes them) and then hear nothing, and
    /// nothing else can bind the port. Close `descriptor` when done.
    public static func silentPort() -> (port: Int, descriptor: Int32) {
        let (port, fd) = boundLoopbackSocket()
        listen(fd, 16)
        return (port, fd)
    }

    /// A TCP socket bound to 127.0.0.1 on a port the kernel chose.
    private static func boundLoopbackSocket() -> (port: Int, descriptor: Int32) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return (Int(UInt16(bigEndian: address.sin_port)), fd)
    }

    public static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
