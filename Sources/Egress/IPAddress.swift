#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IPv4 or IPv6 address as its bytes (4 or 16, network order).
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public var isIPv4: Bool { bytes.count == 4 }

    /// From its text (`192.0.2.1`, `2001:db8::1`, `[::1]`), or nil.
    public init?(_ text: String) {
        let bare = text.hasPrefix("[") && text.hasSuffix("]") ? String(text.dropFirst().dropLast()) : text
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, bare, &v4) == 1 {
            bytes = withUnsafeBytes(of: v4) { Array($0) }
        } else if inet_pton(AF_INET6, bare, &v6) == 1 {
            bytes = withUnsafeBytes(of: v6) { Array($0) }
        } else {
            return nil
        }
    }

    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// From a socket address of the IPv4 or IPv6 family, or nil for any other.
    init?(_ address: UnsafePointer<sockaddr>) {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            bytes = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) } }
        case AF_INET6:
            bytes = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) }
            }
        default:
            return nil
        }
    }

    /// 127.0.0.0/8 or ::1 (an IPv4-mapped loopback too): this machine, whatever its interfaces.
    public var isLoopback: Bool {
        let plain = mappedIPv4 ?? self
        return SpecialAddresses.loopback.contains { $0.contains(plain) }
    }

    /// The IPv4 address an IPv6 one carries as IPv4-mapped (`::ffff:a.b.c.d`), else nil.
    public var mappedIPv4: IPAddress? {
        guard bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff else { return nil }
        return IPAddress(bytes: Array(bytes[12..<16]))
    }

    public var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        bytes.withUnsafeBytes { raw in
            _ = inet_ntop(isIPv4 ? AF_INET : AF_INET6, raw.baseAddress, &text, socklen_t(text.count))
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A block of addresses, `network/prefix` (CIDR).
public struct AddressRange: Hashable, Sendable, CustomStringConvertible {
    public let network: IPAddress
    public let prefix: Int

    /// From `198.51.100.0/24`, `fc00::/7`, or an address alone (all its bits); nil when not one.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let first = parts.first, let address = IPAddress(first) else { return nil }
        let bits = address.bytes.count * 8
        if parts.count == 2 {
            guard let prefix = Int(parts[1]), (0...bits).contains(prefix) else { return nil }
            self.prefix = prefix
        } else {
            self.prefix = bits
        }
        network = address
    }

    public func contains(_ address: IPAddress) -> Bool {
        guard address.bytes.count == network.bytes.count else { return false }
        var left = prefix
        for (a, b) in zip(address.bytes, network.bytes) {
            guard left > 0 else { return true }
            let mask: UInt8 = left >= 8 ? 0xff : ~(0xff >> UInt8(left))
            if a & mask != b & mask { return false }
            left -= 8
        }
        return true
    }

    public var description: String { "\(network)/\(prefix)" }
}
