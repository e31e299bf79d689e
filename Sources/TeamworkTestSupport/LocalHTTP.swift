import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import NIOPosix

/// HTTP requests from tests to a server on this machine, over SwiftNIO, one
/// connection each, with a deadline.
///
/// Not URLSession: Foundation's URLSession on Linux can wedge for good under
/// load: seen in full test runs, its sockets sat in CLOSE_WAIT with the peer
/// long gone, no completion ever came and its own request timeout never fired,
/// so the awaiting tests (and with them the whole run) stopped, idle, forever.
public enum LocalHTTP {
    public struct Response: Sendable {
        public var status: Int
        /// By lowercased name; a header sent more than once has its values one per line.
        public var headers: [String: String]
        public var body: Data

        /// A header's value, whatever the case of `name`.
        public func header(_ name: String) -> String? { headers[name.lowercased()] }

        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    public struct TimedOut: Error, CustomStringConvertible {
        public var description: String
    }

    /// `method uri` to `host`:`port` (127.0.0.1 unless told: `::1` reaches a dual-stack server as
    /// another address), with `headers` (e.g. Authorization) and an optional JSON body.
    public static func request(
        _ method: HTTPRequest.Method = .get, port: Int, _ uri: String, headers: [String: String] = [:], body: Data? = nil,
        timeout: Duration = .seconds(30), host: String = "127.0.0.1"
    ) async throws -> Response {
        var fields = HTTPFields()
        for (name, value) in headers {
            if let field = HTTPField.Name(name) { fields[field] = value }
        }
        if body != nil, fields[.contentType] == nil { fields[.contentType] = "application/json" }
        let request = TestClient.Request(
            uri, method: method, authority: host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)",
            headers: fields,
            body: body.map { ByteBuffer(bytes: $0) })
        let answer = try await withThrowingTaskGroup(of: TestClient.Response?.self) { group in
            group.addTask {
                try await TestClient.withClient(host: host, port: port, configuration: .init(timeout: timeout)) {
                    try await $0.execute(request)
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout + .seconds(5))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let response = first else {
                throw TimedOut(description: "no answer to \(method) \(uri) on port \(port) within \(timeout)")
            }
            return response
        }
        var headers: [String: String] = [:]
        // A header sent more than once (Set-Cookie) keeps every value, one per line.
        for field in answer.head.headerFields {
            let name = field.name.canonicalName.lowercased()
            headers[name] = headers[name].map { $0 + "\n" + field.value } ?? field.value
        }
        return Response(
            status: answer.head.status.code, headers: headers,
            body: answer.body.map { Data($0.readableBytesView) } ?? Data())
    }

    /// The same for a full address on this machine, `http://127.0.0.1:8080/health`.
    public static func request(
        url address: String, method: HTTPRequest.Method = .get, headers: [String: String] = [:], body: Data? = nil,
        timeout: Duration = .seconds(30)
    ) async throws -> Response {
        guard let url = URLComponents(string: address), let port = url.port else {
            throw TimedOut(description: "not an address with a port: \(address)")
        }
        let uri = url.percentEncodedPath + (url.percentEncodedQuery.map { "?" + $0 } ?? "")
        return try await request(method, port: port, uri.isEmpty ? "/" : uri, headers: headers, body: body, timeout: timeout)
    }

    /// A number on `GET /metrics` on `port`: the value of the unlabelled series `name`.
    public static func metric(_ name: String, port: Int, timeout: Duration = .seconds(10)) async throws -> Int {
        let text = try await request(port: port, "/metrics", timeout: timeout).text
        guard
            let value = text.split(separator: "\n").first(where: { $0.hasPrefix(name + " ") })
                .flatMap({ Int($0.split(separator: " ")[1]) })
        else {
            throw TimedOut(description: "no \(name) on /metrics of port \(port)")
        }
        return value
    }

    /// The status of `GET /health` on `port`, or nil when nothing answers.
    public static func health(port: Int, timeout: Duration = .seconds(5)) async -> (status: Int, text: String)? {
        guard let response = try? await request(port: port, "/health", timeout: timeout) else { return nil }
        return (response.status, response.text)
    }
}

extension LocalHTTP {
    /// An answer read as it arrives (live mode's `stream=N`): its status and headers, then its
    /// body's lines, each with the moment it came, until the server ends the answer.
    public struct Stream: Sendable {
        public var status: Int
        public var headers: [String: String]
        public var lines: AsyncThrowingStream<(line: Data, at: ContinuousClock.Instant), any Error>
    }

    /// `GET uri` on a connection of its own, read line by line; the connection is closed after
    /// `timeout` whatever the server does (the lines then end with ``TimedOut``).
    public static func stream(
        port: Int, _ uri: String, headers: [String: String] = [:], timeout: Duration = .seconds(60)
    ) async throws -> Stream {
        let (lines, continuation) = AsyncThrowingStream<(line: Data, at: ContinuousClock.Instant), any Error>.makeStream()
        let reader = LineReader(continuation: continuation)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(reader)
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        let deadline = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(timeout / .nanoseconds(1)))) {
            reader.fail(TimedOut(description: "the stream \(uri) on port \(port) did not end within \(timeout)"))
            channel.close(promise: nil)
        }
        continuation.onTermination = { _ in
            deadline.cancel()
            channel.close(promise: nil)
        }
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: uri)
        head.headers.add(name: "Host", value: "127.0.0.1:\(port)")
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        try await channel.writeAndFlush(HTTPClientRequestPart.end(nil)).get()
        let answered = try await reader.head.futureResult.get()
        var fields: [String: String] = [:]
        for (name, value) in answered.headers { fields[name.lowercased()] = value }
        return Stream(status: Int(answered.status.code), headers: fields, lines: lines)
    }

    /// Hands each whole line of the body on as it comes. Touched only on its channel's event loop.
    private final class LineReader: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPClientResponsePart

        let continuation: AsyncThrowingStream<(line: Data, at: ContinuousClock.Instant), any Error>.Continuation
        let head: EventLoopPromise<HTTPResponseHead>
        private var partial = Data()
        private var ended = false
        private var answered = false

        init(continuation: AsyncThrowingStream<(line: Data, at: ContinuousClock.Instant), any Error>.Continuation) {
            self.continuation = continuation
            head = MultiThreadedEventLoopGroup.singleton.any().makePromise()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let response):
                answered = true
                head.succeed(response)
            case .body(let bytes):
                let at = ContinuousClock.now
                partial.append(contentsOf: bytes.readableBytesView)
                while let end = partial.firstIndex(of: UInt8(ascii: "\n")) {
                    continuation.yield((Data(partial[partial.startIndex..<end]), at))
                    partial.removeSubrange(partial.startIndex...end)
                }
            case .end:
                ended = true
                continuation.finish(throwing: partial.isEmpty ? nil : TimedOut(description: "the stream ended inside a line"))
                context.close(promise: nil)
            }
        }

        func fail(_ error: any Error) {
            if !answered { head.fail(error) }
            answered = true
            continuation.finish(throwing: error)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            fail(error)
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            if !ended { fail(TimedOut(description: "the server closed the connection before the end of the answer")) }
        }
    }
}
