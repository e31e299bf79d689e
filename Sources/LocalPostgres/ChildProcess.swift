import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a program to completion with its output in files.
///
/// posix_spawn and waitpid rather than Foundation.Process, and files rather than
/// pipes: a server that a child leaves running (as `pg_ctl start` does) inherits
/// descriptors, and Foundation.Process, like reading a pipe to its end, waits for
/// those to close, which never happens while the server runs.
public enum ChildProcess {
    /// Runs `argv` (`argv[0]` is an absolute path) to completion and returns its exit status,
    /// or 128 + the signal number if a signal ended it. Standard input is empty unless a file is named.
    /// When both outputs name the same file they share it, in order.
    public static func run(
        _ argv: [String], environment: [String: String]? = nil, standardInput: String = "/dev/null",
        standardOutput: String, standardError: String
    ) throws -> Int32 {
        try wait(
            try spawn(
                argv, environment: environment, standardInput: standardInput,
                standardOutput: standardOutput, standardError: standardError))
    }

    /// Starts `argv` without waiting for it; ``wait(_:)`` collects its exit status.
    /// `passing`: descriptors of ours the child gets as these numbers (3, 4, …; chromium's
    /// `--remote-debugging-pipe` reads 3 and writes 4); everything else past 2 is closed.
    public static func spawn(
        _ argv: [String], environment: [String: String]? = nil, standardInput: String = "/dev/null",
        standardOutput: String, standardError: String, passing: [(ours: Int32, theirs: Int32)] = []
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, standardInput, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, standardOutput, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        if standardError == standardOutput {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, standardError, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        }
        // Nothing else of ours: not the sockets, files and locks a server holds (a child
        // left running would keep them, a replica's flock included), and not thousands of
        // descriptors that would give the child's own new descriptors numbers past what it
        // expects (wrk, spawned by a benchmark holding 5,000 connections, could not connect).
        // Ours are moved out of the way first, so none is overwritten by another's number.
        let moved = passing.map { (fcntl($0.ours, F_DUPFD_CLOEXEC, 100), $0.theirs) }
        defer { moved.forEach { close($0.0) } }
        for (ours, theirs) in moved { posix_spawn_file_actions_adddup2(&actions, ours, theirs) }
        let firstClosed = (passing.map(\.theirs).max() ?? 2) + 1
        if let closeFrom = Self.closeFrom, closeFrom(&actions, firstClosed) != 0 {
            throw LocalClusterError("cannot run \(argv[0]): posix_spawn cannot close descriptors")
        }

        let cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        let cEnvironment = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { cEnvironment?.forEach { free($0) } }
        var pid = pid_t()
        let spawned =
            cEnvironment.map { posix_spawn(&pid, argv[0], &actions, nil, cArguments, $0) }
            ?? posix_spawn(&pid, argv[0], &actions, nil, cArguments, environ)
        guard spawned == 0 else {
            throw LocalClusterError("cannot run \(argv[0]): \(String(cString: strerror(spawned)))")
        }
        return pid
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which
    /// Swift's Glibc module does not declare; looked up once (nil on an older C
    /// library: children then inherit what is not close-on-exec, as before).
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np").map {
            unsafeBitCast($0, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
        }
    }()

    /// Waits for a spawned child: its exit status, or 128 + the signal that ended it.
    public static func wait(_ pid: pid_t) throws -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw LocalClusterError("lost track of process \(pid)") }
        }
        return decode(status)
    }

    /// Waits up to `limit` for a spawned child without blocking a thread (it
    /// looks every 50 ms): its exit status as ``wait(_:)`` says it, or nil if it
    /// is still running then. Async code must not block the few threads it shares
    /// on a child that may never end.
    public static func wait(_ pid: pid_t, within limit: Duration) async throws -> Int32? {
        let deadline = ContinuousClock.now + limit
        while true {
            var status: Int32 = 0
            let found = waitpid(pid, &status, WNOHANG)
            if found == pid { return decode(status) }
            if found < 0, errno != EINTR { throw LocalClusterError("lost track of process \(pid)") }
            if ContinuousClock.now >= deadline { return nil }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// WIFEXITED / WEXITSTATUS by hand: the macros do not come through to Swift.
    private static func decode(_ status: Int32) -> Int32 {
        (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}
