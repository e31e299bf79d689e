import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A PostgreSQL primary and a streaming standby of it (`pg_basebackup -R`) on loopback TCP ports,
/// each also on a unix socket in its own folder: the failover of docs/operations.md, run by the
/// tests and `teamwork-bench failover` as an operator would (no Docker here). Trust authentication
/// on loopback only, as `initdb --auth=trust` sets it.
public struct StreamingPair: Sendable {
    public let primary: LocalCluster
    public let standby: LocalCluster
    public let primaryPort: Int
    public let standbyPort: Int

    /// Both clusters under `directory` (short: the sockets' paths are limited to about 100 bytes).
    public init(directory: URL, primaryPort: Int, standbyPort: Int) {
        self.primaryPort = primaryPort
        self.standbyPort = standbyPort
        primary = LocalCluster(.init(directory: directory.appending(path: "p"), port: primaryPort))
        standby = LocalCluster(.init(directory: directory.appending(path: "s"), port: standbyPort))
    }

    /// Makes the primary (listening on 127.0.0.1), copies it into the standby with `pg_basebackup -R`
    /// and starts the standby streaming from it. With `synchronous`, the primary then waits for the
    /// standby to have each commit on disk before it answers (`synchronous_standby_names = '*'`,
    /// `synchronous_commit = on`): what a device was told was accepted is on both.
    public func start(synchronous: Bool) throws {
        let binaries = try PostgresBinaries.locate(nil)
        let runner = try ServerUser(rootServerUser: primary.configuration.rootServerUser)
        try primary.ensureRunning()
        _ = try primary.stop()
        try append(
            """
            listen_addresses = '127.0.0.1'
            wal_keep_size = '512MB'
            """, to: primary)
        try primary.ensureRunning()
        let standbyData = standby.dataDirectory
        try runner.prepare(directory: standby.configuration.directory, mode: 0o700)
        let copied = try runner.run(
            binaries.directory + "/pg_basebackup",
            ["-h", "127.0.0.1", "-p", String(primaryPort), "-U", LocalCluster.superuser, "-D", standbyData.path, "-R", "-X", "stream"])
        guard copied.status == 0 else { throw LocalClusterError("pg_basebackup failed: \(copied.lastLine)") }
        try append(
            """
            port = \(standbyPort)
            unix_socket_directories = '\(standby.socketDirectory.path)'
            """, to: standby)
        try standby.ensureRunning()
        if synchronous {
            try append("synchronous_standby_names = '*'", to: primary)
            let reloaded = try runner.run(binaries.pgCtl, ["-D", primary.dataDirectory.path, "reload"])
            guard reloaded.status == 0 else { throw LocalClusterError("cannot reload the primary: \(reloaded.lastLine)") }
        }
    }

    /// Stops the primary at once, as a host that died (`pg_ctl stop -m immediate`: no shutdown checkpoint).
    public func killPrimary() throws {
        let binaries = try PostgresBinaries.locate(nil)
        let runner = try ServerUser(rootServerUser: primary.configuration.rootServerUser)
        _ = try runner.run(binaries.pgCtl, ["-D", primary.dataDirectory.path, "-m", "immediate", "-w", "stop"])
    }

    /// Makes the standby the primary (`pg_ctl promote`), waiting until it takes writes.
    public func promoteStandby() throws {
        let binaries = try PostgresBinaries.locate(nil)
        let runner = try ServerUser(rootServerUser: standby.configuration.rootServerUser)
        let promoted = try runner.run(binaries.pgCtl, ["-D", standby.dataDirectory.path, "-w", "-t", "60", "promote"])
        guard promoted.status == 0 else { throw LocalClusterError("cannot promote the standby: \(promoted.lastLine)") }
    }

    /// Stops both (whichever run), for the end of a test.
    public func stop() {
        let binaries = try? PostgresBinaries.locate(nil)
        guard let binaries, let runner = try? ServerUser(rootServerUser: primary.configuration.rootServerUser) else { return }
        for cluster in [standby, primary] where FileManager.default.fileExists(atPath: cluster.dataDirectory.path) {
            _ = try? runner.run(binaries.pgCtl, ["-D", cluster.dataDirectory.path, "-m", "immediate", "-w", "stop"])
        }
    }

    /// Appends settings to a cluster's postgresql.conf (later lines win over earlier ones).
    private func append(_ settings: String, to cluster: LocalCluster) throws {
        let file = cluster.dataDirectory.appending(path: "postgresql.conf")
        let handle = try FileHandle(forWritingTo: file)
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("\n# StreamingPair\n\(settings)\n".utf8))
    }
}
