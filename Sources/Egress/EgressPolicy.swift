#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Which addresses the service may connect to when it sends something out (docs/security.md, "Egress").
///
/// A destination a manager names (a webhook, the SMS endpoint) must be an ordinary public address: not
/// in the IANA special-purpose registries for IPv4 and IPv6 (private, loopback, link-local, shared,
/// documentation, benchmarking, translation and tunnelling prefixes, multicast, reserved), not outside
/// IPv6's global unicast space, and not one of this machine's own interface addresses. The operator
/// may let some of them through: named ranges (`allowed`), or all of them (`allowPrivate`). A
/// destination the operator named on the command line (OSRM, the SMTP relay) is `trusted`: any address,
/// still resolved once and connected to as resolved.
public struct EgressPolicy: Sendable {
    public var allowPrivate: Bool
    public var allowed: [AddressRange]
    public var trusted: Bool

    public init(allowPrivate: Bool = false, allowed: [AddressRange] = [], trusted: Bool = false) {
        (self.allowPrivate, self.allowed, self.trusted) = (allowPrivate, allowed, trusted)
    }

    /// For a destination the operator named: every address, as resolved once.
    public static let operatorNamed = EgressPolicy(trusted: true)

    /// Why `address` may not be connected to, or nil when it may.
    /// This machine's own addresses are refused even inside an allowed range (allowing the local
    /// subnet is not allowing the service to call itself): only an allowed range of that one address
    /// (`127.0.0.1`, `/32`, `/128`), or `allowPrivate`, lets one through.
    public func refusal(_ address: IPAddress) -> String? {
        if trusted || allowPrivate { return nil }
        let own = SpecialAddresses.ownAddresses()
        let plain = address.mappedIPv4 ?? address
        if own.contains(plain) || own.contains(address) || address.isLoopback {
            let named = allowed.contains { $0.prefix == $0.network.bytes.count * 8 && $0.contains(address) }
            return named ? nil : "\(address) is an address of this machine"
        }
        if allowed.contains(where: { $0.contains(address) }) { return nil }
        if let (range, name) = SpecialAddresses.entry(containing: address) {
            return "\(address) is in \(range) (\(name))"
        }
        return nil
    }
}

/// The IANA special-purpose address registries (iana-ipv4-special-registry, iana-ipv6-special-registry,
/// as of 2025), with multicast, IPv4's reserved block and IPv6 outside 2000::/3 added.
public enum SpecialAddresses {
    static let ipv4: [(AddressRange, String)] = [
        ("0.0.0.0/8", "this network"),
        ("10.0.0.0/8", "private use"),
        ("100.64.0.0/10", "shared address space"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link local"),
        ("172.16.0.0/12", "private use"),
        ("192.0.0.0/24", "IETF protocol assignments"),
        ("192.0.2.0/24", "documentation, TEST-NET-1"),
        ("192.31.196.0/24", "AS112-v4"),
        ("192.52.193.0/24", "AMT"),
        ("192.88.99.0/24", "deprecated 6to4 relay anycast"),
        ("192.168.0.0/16", "private use"),
        ("192.175.48.0/24", "direct delegation AS112 service"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation, TEST-NET-2"),
        ("203.0.113.0/24", "documentation, TEST-NET-3"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
        ("255.255.255.255/32", "limited broadcast"),
        // Not IANA's: a cloud host's own endpoint at a public address (Azure's WireServer, which hands a
        // VM its certificates and settings, as 169.254.169.254 does elsewhere).
        ("168.63.129.16/32", "cloud platform host endpoint"),
    ].map { (AddressRange($0.0)!, $0.1) }

    static let ipv6: [(AddressRange, String)] = [
        ("::/96", "unspecified, loopback or IPv4-compatible (deprecated)"),
        ("::ffff:0:0/96", "IPv4-mapped"),
        ("64:ff9b::/96", "IPv4-IPv6 translation"),
        ("64:ff9b:1::/48", "local-use IPv4-IPv6 translation"),
        ("100::/64", "discard-only"),
        ("100:0:0:1::/64", "dummy IPv6 prefix"),
        ("2001::/23", "IETF protocol assignments (Teredo, benchmarking, ORCHID)"),
        ("2001:db8::/32", "documentation"),
        ("2002::/16", "6to4"),
        ("2620:4f:8000::/48", "direct delegation AS112 service"),
        ("3fff::/20", "documentation"),
        ("5f00::/16", "segment routing SIDs"),
        ("fc00::/7", "unique local"),
        ("fe80::/10", "link local"),
        ("ff00::/8", "multicast"),
    ].map { (AddressRange($0.0)!, $0.1) }

    static let globalUnicast = AddressRange("2000::/3")!

    /// Every loopback address is this machine's, whether an interface lists it or not.
    static let loopback = [AddressRange("127.0.0.0/8")!, AddressRange("::1/128")!]

    /// The registry entry `address` falls in, or nil for an ordinary public address.
    public static func entry(containing address: IPAddress) -> (AddressRange, String)? {
        if address.isIPv4 { return ipv4.first { $0.0.contains(address) } }
        // An IPv4-mapped address is judged as the IPv4 address it is.
        if let v4 = address.mappedIPv4 { return entry(containing: v4) ?? (AddressRange("::ffff:0:0/96")!, "IPv4-mapped") }
        if let found = ipv6.first(where: { $0.0.contains(address) }) { return found }
        if !globalUnicast.contains(address) { return (globalUnicast, "outside IPv6 global unicast") }
        return nil
    }

    /// The addresses of this machine's interfaces now (they can change: read at each check).
    public static func ownAddresses() -> Set<IPAddress> {
        var first: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&first) == 0, let list = first else { return [] }
        defer { freeifaddrs(list) }
        var found: Set<IPAddress> = []
        var next: UnsafeMutablePointer<ifaddrs>? = list
        while let entry = next {
            if let address = entry.pointee.ifa_addr, let ip = IPAddress(UnsafePointer(address)) { found.insert(ip) }
            next = entry.pointee.ifa_next
        }
        return found
    }
}
