import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import TeamworkModel

#if canImport(Glibc)
    import Glibc
#endif

/// Why a request that left the service got no usable answer. Its text names the destination's host
/// and what went wrong, never a header, a body or a secret.
public struct EgressFailure: Error, CustomStringConvertible, Sendable {
    public var description: String
    /// No retry helps: the destination is refused by the policy or is not an address.
    public var final: Bool
    /// Why the policy refused the destination, when it did (`description` is then `refused: ` and this).
    public var refusal: String?

    public init(_ description: String, final: Bool = false) { (self.description, self.final) = (description, final) }

    /// The policy refused the destination: no retry helps.
    static func refused(_ why: String) -> EgressFailure {
        var failure = EgressFailure("refused: " + why, final: true)
        failure.refusal = why
        return failure
    }
}

/// An answer: its status, its headers and at most the request's `bodyLimit` bytes of its body.
public struct EgressAnswer: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: Data
    /// The body went on past `bodyLimit`; what is here is its start, and the connection was closed.
    public var truncated: Bool
}

/// One HTTP/1.1 request out of the service, the one way webhooks, texts and the road network are
/// reached (docs/security.md, "Egress"):
///
/// - the host is resolved once, every address it resolves to is vetted by the ``EgressPolicy``, and
///   the connection goes to exactly the vetted address (no second lookup to rebind): the `Host`
///   header and TLS's server name stay the host's;
/// - status, headers and at most `bodyLimit` bytes of the body are read; the connection is closed
///   as soon as that much is in;
/// - one deadline covers looking up, connecting, TLS, sending and reading, and closes the connection
///   when it passes;
/// - at most ``EgressBudget/limit`` connections are open at once in the process, counted from
///   looking up until closed (not per request), waited for within the deadline.
public enum EgressClient {
    public struct Request: Sendable {
        public var method: HTTPMethod
        public var url: URL
        public var headers: [(String, String)]
        public var body: Data

        public init(method: HTTPMethod = .GET, url: URL, headers: [(String, String)] = [], body: Data = Data()) {
            (self.method, self.url, self.headers, self.body) = (method, url, headers, body)
        }
    }

    /// Looks a host up: each address it has (the system's resolver; tests pass their own).
    public typealias Resolver = @Sendable (_ host: String) async throws -> [IPAddress]

    public static let systemResolver: Resolver = { host in
        try await blockingWork {
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var found: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, nil, &hints, &found) == 0, let first = found else {
                throw EgressFailure("\(host) does not resolve")
            }
            defer { freeaddrinfo(first) }
            var addresses: [IPAddress] = []
            var next: UnsafeMutablePointer<addrinfo>? = first
            while let info = next {
                if let address = info.pointee.ai_addr, let ip = IPAddress(UnsafePointer(address)), !addresses.contains(ip) {
                    addresses.append(ip)
                }
                next = info.pointee.ai_next
            }
            return addresses
        }
    }

    /// The address `host` may be reached at under `policy`: the first it resolves to, when every
    /// address it resolves to may be reached (a name that also points inside is refused whole).
    public static func vettedAddress(_ host: String, policy: EgressPolicy, resolver: Resolver = systemResolver) async throws -> IPAddress {
        try await vettedAddresses(host, policy: policy, resolver: resolver)[0]
    }

    /// Every address `host` resolves to, in the resolver's order, when every one may be reached under
    /// `policy` (a name that also points inside is refused whole); never empty.
    public static func vettedAddresses(
        _ host: String, policy: EgressPolicy, resolver: Resolver = systemResolver
    ) async throws
        -> [IPAddress]
    {
        let addresses: [IPAddress]
        if let literal = IPAddress(host) {
            addresses = [literal]
        } else {
            addresses = try await resolver(host)
        }
        guard !addresses.isEmpty else { throw EgressFailure("\(host) does not resolve") }
        for address in addresses {
            if let refusal = policy.refusal(address) {
                throw EgressFailure.refused((addresses.count == 1 && IPAddress(host) != nil ? "" : "\(host): ") + refusal)
            }
        }
        return addresses
    }

    /// Sends `request` within `timeout`, reading at most `bodyLimit` bytes of the answer's body.
    public static func send(
        _ request: Request, policy: EgressPolicy, timeout: Duration, bodyLimit: Int, resolver: @escaping Resolver = systemResolver,
        budget: EgressBudget = .shared
    ) async throws -> EgressAnswer {
        guard let scheme = request.url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = request.url.host, !host.isEmpty
        else { throw EgressFailure("not an http(s) address", final: true) }
        let deadline = ContinuousClock.now + timeout
        let timedOut: @Sendable () -> EgressFailure = { EgressFailure("\(host): no whole answer within \(timeout)") }
        return try await withDeadline(timeout, timeout: timedOut) {
            // The lookup counts in the budget too: a slow resolver holds a slot, not an unbounded thread each.
            try await budget.acquire()
            var released = false
            defer { if !released { budget.release() } }
            let address = try await vettedAddress(host, policy: policy, resolver: resolver)
            // A slot or an answer that came after the deadline (the caller has its timeout): no connection.
            try Task.checkCancellation()
            let port = request.url.port ?? (scheme == "https" ? 443 : 80)
            let socket = try SocketAddress(packedIPAddress: ByteBuffer(bytes: address.bytes), port: port)
            let promise = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: EgressAnswer.self)
            let collector = AnswerCollector(promise: promise, bodyLimit: bodyLimit, host: host)
            let remaining = max(deadline - ContinuousClock.now, .milliseconds(1))
            let channel: any Channel
            do {
                channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .connectTimeout(TimeAmount(remaining))
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            if scheme == "https" {
                                let context = try NIOSSLContext(configuration: .makeClientConfiguration())
                                try channel.pipeline.syncOperations.addHandler(
                                    try NIOSSLClientHandler(context: context, serverHostname: IPAddress(host) == nil ? host : nil))
                            }
                            try channel.pipeline.syncOperations.addHTTPClientHandlers()
                            try channel.pipeline.syncOperations.addHandler(collector)
                        }
                    }
                    .connect(to: socket).get()
            } catch {
                promise.fail(error)
                // The connect's timeout is what the one deadline left of itself: its running out is the
                // deadline's, not an unreachable receiver (seen in CI: a loaded machine left 1 ms to connect
                // and the operator read "cannot reach 127.0.0.1: Connect timeout (1 ms)").
                if case ChannelError.connectTimeout = error { throw timedOut() }
                throw EgressFailure("cannot reach \(host): \(Self.describe(error))")
            }
            // The connection counts against the budget until it is closed, whatever the caller does next.
            released = true
            channel.closeFuture.whenComplete { _ in budget.release() }
            let closer = channel.eventLoop.scheduleTask(in: TimeAmount(max(deadline - ContinuousClock.now, .zero))) {
                promise.fail(timedOut())
                channel.close(promise: nil)
            }
            // Closed, and its close waited for, before the caller hears of the answer: the next request
            // for the same receiver (one in flight per subscription) never overlaps this connection.
            func closed() async {
                closer.cancel()
                channel.close(promise: nil)
                _ = try? await channel.closeFuture.get()
            }
            var head = HTTPRequestHead(version: .http1_1, method: request.method, uri: Self.target(request.url))
            head.headers.add(name: "Host", value: Self.hostHeader(request.url))
            for (name, value) in request.headers { head.headers.add(name: name, value: value) }
            if !request.body.isEmpty || request.method == .POST || request.method == .PUT {
                head.headers.replaceOrAdd(name: "Content-Length", value: String(request.body.count))
            }
            head.headers.replaceOrAdd(name: "Connection", value: "close")
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            if !request.body.isEmpty {
                channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: request.body))), promise: nil)
            }
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
            do {
                let answer = try await promise.futureResult.get()
                await closed()
                return answer
            } catch let failure as EgressFailure {
                await closed()
                throw failure
            } catch {
                await closed()
                throw EgressFailure("\(host): \(Self.describe(error))")
            }
        }
    }

    /// The `Host` header for `url`: its host (an IPv6 one in brackets), and its port unless the scheme's own.
    /// (Signed as it is sent: S3's signature covers it.)
    public static func hostHeader(_ url: URL) -> String {
        let host = url.host ?? ""
        let scheme = url.scheme?.lowercased() ?? "http"
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        let defaultPort = (scheme == "https" && port == 443) || (scheme == "http" && port == 80)
        return (host.contains(":") ? "[\(host)]" : host) + (defaultPort ? "" : ":\(port)")
    }

    /// The request line's target: the path and query, `/` when empty.
    static func target(_ url: URL) -> String {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        let path = components?.percentEncodedPath ?? "/"
        let query = components?.percentEncodedQuery.map { "?" + $0 } ?? ""
        return (path.isEmpty ? "/" : path) + query
    }

    static func describe(_ error: any Error) -> String {
        if let failure = error as? EgressFailure { return failure.description }
        if error is ChannelError { return "the connection failed (\(error))" }
        if error is NIOSSLError { return "TLS failed (\(error))" }
        return "\(type(of: error))"
    }

    /// Takes the answer's head and the start of its body; on its channel's event loop only.
    final class AnswerCollector: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPClientResponsePart
        let promise: EventLoopPromise<EgressAnswer>
        let bodyLimit: Int
        let host: String
        var answer: EgressAnswer?
        var done = false

        init(promise: EventLoopPromise<EgressAnswer>, bodyLimit: Int, host: String) {
            (self.promise, self.bodyLimit, self.host) = (promise, bodyLimit, host)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !done else { return }
            switch Self.unwrapInboundIn(data) {
            case .head(let head):
                // An interim answer (100 Continue) is not the answer.
                guard head.status.code >= 200 else { return }
                answer = EgressAnswer(
                    status: Int(head.status.code), headers: head.headers.map { ($0.name, $0.value) }, body: Data(), truncated: false)
            case .body(var bytes):
                guard var got = answer else { return }
                let room = bodyLimit - got.body.count
                if bytes.readableBytes > room {
                    got.body.append(contentsOf: bytes.readBytes(length: max(room, 0)) ?? [])
                    got.truncated = true
                    finish(context, .success(got))
                    return
                }
                got.body.append(contentsOf: bytes.readBytes(length: bytes.readableBytes) ?? [])
                answer = got
            case .end:
                if let answer { finish(context, .success(answer)) }
            }
        }

        func finish(_ context: ChannelHandlerContext, _ outcome: Result<EgressAnswer, any Error>) {
            guard !done else { return }
            done = true
            promise.completeWith(outcome)
            context.close(promise: nil)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            finish(context, .failure(EgressFailure("\(host): \(EgressClient.describe(error))")))
        }

        func channelInactive(context: ChannelHandlerContext) {
            // A body that ends with the connection (no length given) ends here.
            finish(context, answer.map { .success($0) } ?? .failure(EgressFailure("\(host) closed the connection without an answer")))
            context.fireChannelInactive()
        }
    }
}

/// How many connections out of the service may be open at once (``limit``), counted from before
/// looking the host up until the connection is closed. A caller waits for room, first come first
/// served, until its own deadline cancels the wait.
public final class EgressBudget: Sendable {
    public static let shared = EgressBudget(limit: 16)

    public let limit: Int
    struct State {
        var open = 0
        var most = 0
        var waiting: [(id: UUID, continuation: CheckedContinuation<Void, any Error>)] = []
    }
    let state = Locked(State())

    public init(limit: Int) { self.limit = limit }

    /// Connections open now.
    public var open: Int { state.value.open }
    /// The most ever open at once.
    public var most: Int { state.value.most }

    func acquire() async throws {
        let id = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Verdict { case granted, cancelled, queued }
                let verdict = state.mutate { state -> Verdict in
                    // Cancelled before waiting (the handler ran first and found no waiter): never queued.
                    if Task.isCancelled { return .cancelled }
                    if state.open < limit {
                        state.open += 1
                        state.most = max(state.most, state.open)
                        return .granted
                    }
                    state.waiting.append((id, continuation))
                    return .queued
                }
                switch verdict {
                case .granted: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .queued: break
                }
            }
        } onCancel: {
            state.mutate { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiting.remove(at: index).continuation
            }?.resume(throwing: CancellationError())
        }
    }

    func release() {
        let next = state.mutate { state -> CheckedContinuation<Void, any Error>? in
            if !state.waiting.isEmpty { return state.waiting.removeFirst().continuation }
            state.open -= 1
            return nil
        }
        next?.resume()
    }
}
