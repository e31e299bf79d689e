import Foundation
import LocalPostgres
import TeamworkModel

#if canImport(Glibc)
    import Glibc
#endif

/// An haproxy of the test's own (Debian's, which CI installs) in front of several service hosts on
/// loopback ports: one address, each device kept on one host while it answers (by its token), a
/// host whose port refuses connections taken out within a second and back when it listens again. Stopped after
/// `body`. The same configuration as docs/operations.md's, but for the ports.
public enum ProxyServer {
    /// The haproxy program's path: found on the PATH, else Debian's place for it.
    static func haproxy() -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let folders = path.split(separator: ":").map(String.init) + ["/usr/sbin"]
        return folders.map { $0 + "/haproxy" }.first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/sbin/haproxy"
    }

    /// The configuration for a proxy on `port` in front of `hosts` (loopback ports).
    public static func configuration(port: Int, hosts: [Int]) -> String {
        """
        global
            maxconn 4096
        defaults
            mode http
            option forwardfor
            option redispatch
            retries 3
            timeout connect 2s
            # A live-mode pull waits up to a minute for news; an upload piece on a slow link, longer.
            timeout client 5m
            timeout server 5m
            timeout http-keep-alive 30s
        frontend field
            bind 127.0.0.1:\(port)
            default_backend hosts
        backend hosts
            # A device stays on one host while it answers, by its token (a phone's cookie, a device's
            # bearer token): each host's replica files have their own epochs, and a device that
            # alternated would refetch. Consistent hashing moves only the devices of a host that went.
            http-request set-var(txn.device) req.cook(__Host-tw_device)
            http-request set-var(txn.device) req.hdr(Authorization) if { req.hdr(Authorization) -m found }
            balance hash var(txn.device)
            hash-type consistent

        """
            + hosts.enumerated().map { "    server host\($0.offset) 127.0.0.1:\($0.element) check inter 500 fall 2 rise 1\n" }.joined()
    }

    public static func with<T>(hosts: [Int], _ body: (_ url: String) async throws -> T) async throws -> T {
        let folder = FileManager.default.temporaryDirectory.appending(path: "haproxy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let port = ServiceProcess.freePort()
        let file = folder.appending(path: "haproxy.cfg")
        try configuration(port: port, hosts: hosts).write(to: file, atomically: true, encoding: .utf8)
        let pid = try ChildProcess.spawn(
            [haproxy(), "-db", "-f", file.path], environment: nil, standardOutput: folder.path + "/log",
            standardError: folder.path + "/log")
        // Waited for on a Dispatch thread, never on the cooperative pool the other tests share.
        func stop() async {
            kill(pid, SIGTERM)
            if (try? await ChildProcess.wait(pid, within: .seconds(10))) == nil {
                kill(pid, SIGKILL)
                _ = try? await ChildProcess.wait(pid, within: .seconds(10))
            }
        }
        return try await withCleanup {
            guard try await eventually(within: .seconds(20), every: .milliseconds(50), { ServiceProcess.accepts(port) }) else {
                let log = (try? String(contentsOfFile: folder.path + "/log", encoding: .utf8)) ?? ""
                throw TeamworkError(
                    .internal, "haproxy did not listen within 20 s (is it installed? apt-get install haproxy): \(log.suffix(1_000))")
            }
            return try await body("http://127.0.0.1:\(port)")
        } cleanup: {
            await stop()
        }
    }
}
