import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Opens (and closes) one TCP connection to learn whether a server can be
/// reached at all, within a time limit: URLSession on Linux has no connect
/// timeout of its own, only one for the whole request.
enum TCPProbe {
    /// `nil` when a connection to `host:port` opened within `limit`, else why not.
    static func connect(host: String, port: Int, within limit: Duration) async -> String? {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: blockingConnect(host: host, port: port, within: limit))
            }
        }
    }

    private static func blockingConnect(host: String, port: Int, within limit: Duration) -> String? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &found)
        guard resolved == 0, let first = found else { return "cannot resolve \(host): \(String(cString: gai_strerror(resolved)))" }
        defer { freeaddrinfo(first) }
        let deadline = ContinuousClock.now + limit
        var reason = "no address for \(host)"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let address = candidate {
            candidate = address.pointee.ai_next
            let fd = socket(
                address.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            if Glibc.connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 { return nil }
            guard errno == EINPROGRESS else {
                reason = String(cString: strerror(errno))
                continue
            }
            let left = deadline - ContinuousClock.now
            let millis = max(0, Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard poll(&poller, 1, millis) > 0 else {
                reason = "no connection within \(limit)"
                continue
            }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            if error == 0 { return nil }
            reason = String(cString: strerror(error))
        }
        return reason
    }
}
