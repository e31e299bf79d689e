import Foundation
import TeamworkModel

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP relay on 127.0.0.1 in front of a local port that counts every byte each way: what a phone
/// pays for at the wire (headers, bodies, every request of the page and of its service worker).
public final class CountingRelay: @unchecked Sendable {
    public let port: Int
    private let listener: Int32
    private let target: Int
    private let counts = Locked((down: 0, up: 0, connections: 0, requests: 0))
    private let seen = Locked([String]())

    /// Bytes to the client (answers) and from it (requests), and the connections made, so far.
    public var down: Int { counts.value.down }
    public var up: Int { counts.value.up }
    public var connections: Int { counts.value.connections }
    /// HTTP/1.1 requests seen (request lines; one split across two reads is missed).
    public var requests: Int { counts.value.requests }
    /// The request lines seen ("GET /app/ HTTP/1.1"), the first 10,000: those that begin a read.
    public var requestLines: [String] { seen.value }

    public init(to target: Int) throws {
        self.target = target
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TeamworkError(.internal, "the relay cannot make a socket") }
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard bound == 0, named == 0, listen(descriptor, 128) == 0 else {
            close(descriptor)
            throw TeamworkError(.internal, "the relay cannot listen on 127.0.0.1")
        }
        listener = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in accepting() }
    }

    /// Starts counting again from zero.
    public func reset() {
        counts.mutate { $0 = (0, 0, 0, 0) }
        seen.mutate { $0 = [] }
    }

    public func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func accepting() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: target)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else {
                close(client)
                close(server)
                continue
            }
            counts.mutate { $0.connections += 1 }
            // Each end closes once both directions have ended.
            let ends = Locked(2)
            let finished: @Sendable () -> Void = {
                if ends.mutate({ value -> Int in
                    value -= 1
                    return value
                }) == 0 {
                    close(client)
                    close(server)
                }
            }
            Thread.detachNewThread { [self] in
                copy(from: client, to: server) { bytes in
                    let lines = Self.requestLines(in: bytes)
                    if lines > 0, let first = String(decoding: bytes.prefix(2048), as: UTF8.self).split(separator: "\r\n").first,
                        first.hasSuffix(" HTTP/1.1")
                    {
                        seen.mutate { if $0.count < 10_000 { $0.append(String(first)) } }
                    }
                    counts.mutate {
                        $0.up += bytes.count
                        $0.requests += lines
                    }
                }
                finished()
            }
            Thread.detachNewThread { [self] in
                copy(from: server, to: client) { bytes in counts.mutate { $0.down += bytes.count } }
                finished()
            }
        }
    }

    private static let requestLine = Array(" HTTP/1.1\r\n".utf8)

    private static func requestLines(in bytes: ArraySlice<UInt8>) -> Int {
        var (count, index) = (0, bytes.startIndex)
        while index + requestLine.count <= bytes.endIndex {
            if bytes[index] == requestLine[0], bytes[index..<(index + requestLine.count)].elementsEqual(requestLine) {
                count += 1
                index += requestLine.count
            } else {
                index += 1
            }
        }
        return count
    }

    private func copy(from source: Int32, to target: Int32, counted: (ArraySlice<UInt8>) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            counted(buffer[0..<count])
            var offset = 0
            while offset < count {
                let written = buffer.withUnsafeBytes { write(target, $0.baseAddress! + offset, count - offset) }
                if written <= 0 { break }
                offset += written
            }
            if offset < count { break }
        }
        shutdown(target, Int32(SHUT_WR))
    }
}
