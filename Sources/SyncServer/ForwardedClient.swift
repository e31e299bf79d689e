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
        guard let peer = context.channel.remoteAddress, trusted.contains(AddressLimiter.key(peer.ipAddress)),
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
            let text = entry.trimmingCharacters(in: .whitespaces)
            guard let address = try? SocketAddress(ipAddress: text, port: 0) else { break }
            client = address
            if !trusted.contains(AddressLimiter.key(text)) { break }
        }
        return client
    }
}

extension SyncServer {
    /// How a `--trusted-proxy` address is kept (``Configuration/trustedProxies``), or `nil` when
    /// `text` is not an IP address.
    public static func proxyKey(_ text: String) -> String? {
        (try? SocketAddress(ipAddress: text, port: 0)).map { _ in AddressLimiter.key(text) }
    }
}
