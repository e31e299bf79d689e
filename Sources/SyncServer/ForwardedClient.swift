import Hummingbird
import NIOCore
import ServerSupport

/// Behind a proxy (`--trusted-proxy`), the client a request comes from is the one the proxy names in
/// `X-Forwarded-For`: only a peer in `trusted` is believed, and of the addresses the header lists
/// the rightmost one no trusted proxy holds is the client (what a client wrote itself is further
/// left, and is never taken). A header that is not a list of addresses leaves the peer as it is.
struct ForwardedClient: RouterMiddleware {
    typealias Context = SyncRequestContext
    let trusted: Set<String>

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let peer = context.channel.remoteAddress, let ip = peer.ipAddress, trusted.contains(SyncServer.proxyKey(ip) ?? ""),
            let client = Self.client(request.headers[values: .init("X-Forwarded-For")!], trusted: trusted)
        else { return try await next(request, context) }
        var context = context
        context.forwardedClient = client
        return try await next(request, context)
    }

    /// The client `values` (every `X-Forwarded-For` field, in order) name, past the `trusted` proxies.
    static func client(_ values: [String], trusted: Set<String>) -> SocketAddress? {
        var client: SocketAddress?
        for entry in values.flatMap({ $0.split(separator: ",") }).reversed() {
            guard let text = address(in: entry.trimmingCharacters(in: .whitespaces)),
                let address = try? SocketAddress(ipAddress: text, port: 0)
            else { break }
            client = address
            if !trusted.contains(SyncServer.proxyKey(text) ?? "") { break }
        }
        return client
    }
}

extension ForwardedClient {
    /// The address an `X-Forwarded-For` entry names, its port taken off (`198.51.100.7:443`,
    /// `[2001:db8::1]:443`); an address alone as it is.
    static func address(in entry: String) -> String? {
        if entry.hasPrefix("["), let end = entry.firstIndex(of: "]") { return String(entry[entry.index(after: entry.startIndex)..<end]) }
        let colons = entry.count { $0 == ":" }
        if colons == 1, let colon = entry.firstIndex(of: ":") { return String(entry[..<colon]) }
        return entry.isEmpty ? nil : entry
    }
}

extension SyncServer {
    /// How a `--trusted-proxy` address is kept and compared (``Configuration/trustedProxies``): the
    /// address itself, as the system writes it (an IPv6 address whole, not by its /64 as budgets count
    /// it: a neighbour in the proxy's network is not the proxy), or `nil` when `text` is not an IP address.
    public static func proxyKey(_ text: String) -> String? {
        guard let address = try? SocketAddress(ipAddress: text, port: 0), let written = address.ipAddress else { return nil }
        let lowered = written.lowercased()
        // An IPv4 client on a dual-stack socket: as itself.
        for mapped in ["::ffff:"] where lowered.hasPrefix(mapped) && lowered.dropFirst(mapped.count).contains(".") {
            return String(lowered.dropFirst(mapped.count))
        }
        return lowered
    }
}
