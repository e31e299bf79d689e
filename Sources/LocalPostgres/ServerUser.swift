import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs the server programs as the caller, or, when the caller is root, as an
/// unprivileged system user (PostgreSQL refuses to run as root).
struct ServerUser: Sendable {
    /// The user to switch to, or `nil` to run as the caller.
    var switchTo: (name: String, uid: uid_t, gid: gid_t)?

    init(rootServerUser: String) throws {
        guard geteuid() == 0 else {
            switchTo = nil
            return
        }
        guard let entry = getpwnam(rootServerUser) else {
            throw LocalClusterError(
                "running as root needs the '\(rootServerUser)' system user to run PostgreSQL (Debian: apt-get install postgresql)"
            )
        }
        switchTo = (rootServerUser, entry.pointee.pw_uid, entry.pointee.pw_gid)
    }

    /// Creates `directory` if needed, owned by the server user with `mode`.
    func prepare(directory: URL, mode: Int) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if let switchTo {
            guard chown(directory.path, switchTo.uid, switchTo.gid) == 0 else {
                throw LocalClusterError("cannot hand \(directory.path) to the '\(switchTo.name)' user")
            }
        }
        chmod(directory.path, mode_t(mode))
    }

    struct Result {
        var status: Int32
        var output: String
        /// The last non-empty line of output, for a one-line error.
        var lastLine: String {
            output.split(whereSeparator: \.isNewline).last.map(String.init) ?? "exit status \(status)"
        }
    }

    func run(_ program: String, _ arguments: [String]) throws -> Result {
        // Run from "/": the server user may not be allowed into the caller's directory.
        let inRoot = ["/bin/sh", "-c", "cd / && exec \"$0\" \"$@\"", program]
        let argv = switchTo.map { ["/usr/sbin/runuser", "-u", $0.name, "--"] + inRoot } ?? inRoot
        // posix_spawn and waitpid rather than Foundation.Process, and output to a
        // file rather than a pipe: the server that `pg_ctl start` leaves behind
        // inherits descriptors, and Foundation.Process (like reading a pipe to its
        // end) waits for those to close, which never happens while the server runs.
        let outputPath = FileManager.default.temporaryDirectory.appending(path: "teamwork-pg-\(UUID().uuidString).log").path
        defer { unlink(outputPath) }
        let status = try spawnAndWait(argv + arguments, outputPath: outputPath)
        let data = FileManager.default.contents(atPath: outputPath) ?? Data()
        return Result(status: status, output: String(decoding: data, as: UTF8.self))
    }

    private func spawnAndWait(_ argv: [String], outputPath: String) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        let cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, cArguments, environ)
        guard spawned == 0 else {
            throw LocalClusterError("cannot run \(argv[0]): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw LocalClusterError("lost track of \(argv[0])") }
        }
        // WIFEXITED / WEXITSTATUS by hand: the macros do not come through to Swift.
        let exited = (status & 0x7f) == 0
        return exited ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}
