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
        let process = Process()
        if let switchTo {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            process.arguments = ["-u", switchTo.name, "--", program] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = arguments
        }
        // The server's working directory must be readable by the server user.
        process.currentDirectoryURL = URL(fileURLWithPath: "/")
        // Output goes to a file, not a pipe: the server that `pg_ctl start` leaves
        // behind would inherit a pipe and keep it open, so reading to EOF would hang.
        let outputURL = FileManager.default.temporaryDirectory.appending(path: "teamwork-pg-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: outputURL) }
        let output = try FileHandle(forWritingTo: outputURL)
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try? output.close()
        let data = (try? Data(contentsOf: outputURL)) ?? Data()
        return Result(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
    }
}
