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
        let outputPath = FileManager.default.temporaryDirectory.appending(path: "teamwork-pg-\(UUID().uuidString).log").path
        defer { unlink(outputPath) }
        let status = try ChildProcess.run(argv + arguments, standardOutput: outputPath, standardError: outputPath)
        let data = FileManager.default.contents(atPath: outputPath) ?? Data()
        return Result(status: status, output: String(decoding: data, as: UTF8.self))
    }
}
