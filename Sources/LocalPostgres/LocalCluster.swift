import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A private PostgreSQL cluster in a directory of its own, reachable only through
/// a unix socket in that directory (no TCP port), with trust authentication: the
/// socket directory's permissions are the access control.
///
/// It backs the zero-setup local default of the tools and the throwaway databases
/// of the tests. PostgreSQL refuses to run as root, so when the caller is root the
/// server runs as the unprivileged `postgres` system user that the distribution's
/// package creates, and owns its directory.
public struct LocalCluster: Sendable {
    /// Where the cluster lives and which server binaries run it.
    public struct Configuration: Sendable {
        /// Holds `data/`, `run/` (the socket) and `server.log`.
        public var directory: URL
        /// Names the socket file (`.s.PGSQL.<port>`); nothing listens on TCP.
        public var port: Int
        /// The folder with `initdb`, `pg_ctl` and `postgres`; found automatically when `nil`.
        public var binDirectory: URL?
        /// The system user that runs the server when the caller is root.
        public var rootServerUser: String

        public init(directory: URL, port: Int = 5432, binDirectory: URL? = nil, rootServerUser: String = "postgres") {
            self.directory = directory
            self.port = port
            self.binDirectory = binDirectory
            self.rootServerUser = rootServerUser
        }
    }

    /// What ``ensureRunning()`` had to do.
    public enum StartOutcome: Sendable, Equatable {
        case alreadyRunning
        case started
        case created
    }

    /// The superuser created by `initdb`.
    public static let superuser = "postgres"

    public let configuration: Configuration

    public init(_ configuration: Configuration) {
        self.configuration = configuration
    }

    public var dataDirectory: URL { configuration.directory.appending(path: "data") }
    public var socketDirectory: URL { configuration.directory.appending(path: "run") }
    public var logFile: URL { configuration.directory.appending(path: "server.log") }
    public var socketPath: String { socketDirectory.appending(path: ".s.PGSQL.\(configuration.port)").path }

    /// Creates the cluster if it does not exist and starts it if it is not running.
    /// Safe to call from several processes at once: they serialize on a lock file.
    @discardableResult
    public func ensureRunning() throws -> StartOutcome {
        let binaries = try PostgresBinaries.locate(configuration.binDirectory)
        guard socketPath.utf8.count < 100 else {
            throw LocalClusterError("the cluster directory path is too long for a unix socket; choose a shorter one")
        }
        let runner = try ServerUser(rootServerUser: configuration.rootServerUser)
        let fm = FileManager.default
        try fm.createDirectory(at: configuration.directory, withIntermediateDirectories: true)
        return try withLock {
            var outcome = StartOutcome.started
            if !fm.fileExists(atPath: dataDirectory.appending(path: "PG_VERSION").path) {
                try initialize(binaries: binaries, runner: runner)
                outcome = .created
            }
            if try isRunning(binaries: binaries, runner: runner) {
                return .alreadyRunning
            }
            try runner.prepare(directory: socketDirectory, mode: 0o700)
            let result = try runner.run(
                binaries.pgCtl,
                [
                    "-D", dataDirectory.path, "-l", logFile.path, "-w", "-t", "60", "start",
                ])
            guard result.status == 0 else {
                throw LocalClusterError("PostgreSQL did not start (see \(logFile.path)): \(result.lastLine)")
            }
            return outcome
        }
    }

    /// Stops the server if it runs. Waits until it has shut down. Returns
    /// whether it was running.
    @discardableResult
    public func stop() throws -> Bool {
        let binaries = try PostgresBinaries.locate(configuration.binDirectory)
        let runner = try ServerUser(rootServerUser: configuration.rootServerUser)
        guard FileManager.default.fileExists(atPath: dataDirectory.path),
            try isRunning(binaries: binaries, runner: runner)
        else { return false }
        let result = try runner.run(binaries.pgCtl, ["-D", dataDirectory.path, "-m", "fast", "-w", "stop"])
        guard result.status == 0 else {
            throw LocalClusterError("PostgreSQL did not stop: \(result.lastLine)")
        }
        return true
    }

    /// A backup of the running cluster in `directory` (`pg_basebackup`, with the WAL it needs),
    /// as an operator takes one: restored with ``restore(_:into:)``.
    public func baseBackup(into directory: URL) throws {
        let binaries = try PostgresBinaries.locate(configuration.binDirectory)
        let runner = try ServerUser(rootServerUser: configuration.rootServerUser)
        try runner.prepare(directory: directory.deletingLastPathComponent(), mode: 0o755)
        let result = try runner.run(
            binaries.directory + "/pg_basebackup",
            [
                "-h", socketDirectory.path, "-p", String(configuration.port), "-U", Self.superuser, "-D", directory.path,
                "-X", "stream", "-c", "fast",
            ])
        guard result.status == 0 else { throw LocalClusterError("pg_basebackup failed: \(result.lastLine)") }
    }

    /// A cluster made from a backup taken by ``baseBackup(into:)``: its data copied into
    /// `configuration`'s folder, listening where `configuration` says; started with ``ensureRunning()``.
    public static func restore(_ backup: URL, into configuration: Configuration) throws -> LocalCluster {
        let cluster = LocalCluster(configuration)
        let runner = try ServerUser(rootServerUser: configuration.rootServerUser)
        try runner.prepare(directory: configuration.directory, mode: 0o700)
        let copied = try runner.run("/bin/cp", ["-a", backup.path, cluster.dataDirectory.path])
        guard copied.status == 0 else { throw LocalClusterError("cannot copy the backup: \(copied.lastLine)") }
        let settings = """

            # Restored from a backup: listening here.
            port = \(configuration.port)
            unix_socket_directories = '\(cluster.socketDirectory.path.replacingOccurrences(of: "'", with: "''"))'
            listen_addresses = ''

            """
        let handle = try FileHandle(forWritingTo: cluster.dataDirectory.appending(path: "postgresql.conf"))
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(settings.utf8))
        return cluster
    }

    private func isRunning(binaries: PostgresBinaries, runner: ServerUser) throws -> Bool {
        try runner.run(binaries.pgCtl, ["-D", dataDirectory.path, "status"]).status == 0
    }

    /// Runs `initdb` into a scratch folder and renames it into place, so an
    /// interrupted first run never leaves a half-made cluster behind.
    private func initialize(binaries: PostgresBinaries, runner: ServerUser) throws {
        let fm = FileManager.default
        let scratch = configuration.directory.appending(path: "data.initdb")
        try? fm.removeItem(at: scratch)
        try runner.prepare(directory: configuration.directory, mode: 0o700)
        let result = try runner.run(
            binaries.initdb,
            [
                "-D", scratch.path, "-U", Self.superuser, "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync",
            ])
        guard result.status == 0 else {
            throw LocalClusterError("initdb failed: \(result.lastLine)")
        }
        let settings = """

            # Teamwork local cluster: unix socket only, inside the cluster's own folder.
            listen_addresses = ''
            port = \(configuration.port)
            unix_socket_directories = '\(socketDirectory.path.replacingOccurrences(of: "'", with: "''"))'
            unix_socket_permissions = 0700

            """
        let conf = scratch.appending(path: "postgresql.conf")
        let handle = try FileHandle(forWritingTo: conf)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(settings.utf8))
        try handle.close()
        try fm.moveItem(at: scratch, to: dataDirectory)
    }

    private func withLock<T>(_ body: () throws -> T) throws -> T {
        let lockPath = configuration.directory.appending(path: ".lock").path
        let fd = open(lockPath, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LocalClusterError("cannot open lock file \(lockPath)") }
        defer { close(fd) }
        guard flock(fd, LOCK_EX) == 0 else { throw LocalClusterError("cannot lock \(lockPath)") }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }
}

/// A failure to create, start or stop a local cluster, with a message for people.
public struct LocalClusterError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
