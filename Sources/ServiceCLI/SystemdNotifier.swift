import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// systemd's notification protocol (sd_notify(3)): datagrams such as
/// `READY=1` or `WATCHDOG=1` to the socket in `NOTIFY_SOCKET`. Written here,
/// not linked from libsystemd: it is one `sendto`.
struct SystemdNotifier: Sendable {
    /// The socket's path; one starting with `@` is in the abstract namespace.
    let socketPath: String
    /// How often systemd wants `WATCHDOG=1` at the latest (`WATCHDOG_USEC`), if it watches.
    let watchdogInterval: Duration?

    /// From the environment systemd gives a `Type=notify` service; `nil` when not run so.
    static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> SystemdNotifier? {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty, path.utf8.count < 108 else { return nil }
        var interval: Duration?
        if let micros = environment["WATCHDOG_USEC"].flatMap(Int64.init), micros > 0,
            environment["WATCHDOG_PID"].map({ $0 == String(getpid()) }) ?? true
        {
            interval = .microseconds(micros)
        }
        return SystemdNotifier(socketPath: path, watchdogInterval: interval)
    }

    /// Sends one notification; returns whether it went. It never waits: a notification the reader
    /// has no room for now (a unix datagram socket queues 10 by default) is dropped and `false`
    /// returned, and the caller sends again on its next beat. (A blocking send waited there for the
    /// reader, holding one of the few threads Swift's tasks run on, and the watchdog's loop with
    /// it: after the wait it fed systemd a health it had judged seconds before, seen in a test.)
    @discardableResult
    func send(_ state: String) -> Bool {
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketPath.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }
        let length = withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: path)
            return MemoryLayout<sa_family_t>.size + path.count
        }
        let bytes = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT), $0, socklen_t(length))
            }
        }
        return sent == bytes.count
    }
}
