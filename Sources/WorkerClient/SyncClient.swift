import Foundation
import HTTPFetch
import SyncProtocol
import TeamworkModel

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Talks to the sync endpoint: lists, pulls and pushes. Every request has a
/// deadline; a server that cannot be reached is retried as ``Retrying`` says, one
/// that accepts the connection but does not answer is not waited on twice.
public struct SyncClient: Sendable {
    /// How long a worker waits for the server.
    public struct Timeouts: Sendable, Equatable {
        /// To open a TCP connection to the server (a dead network, a wrong address).
        public var connect: Duration
        /// For one request's whole answer (a hung server, a captive portal).
        public var request: Duration

        public init(connect: Duration = .seconds(10), request: Duration = .seconds(30)) {
            self.connect = connect
            self.request = request
        }
    }

    public var server: URL
    public var token: String
    /// Attempts per request when the server cannot be reached or answers 429/502/503/504.
    public var attempts: Int
    public var timeouts: Timeouts

    public init(server: URL, token: String, attempts: Int = 3, timeouts: Timeouts = Timeouts()) {
        self.server = server
        self.token = token
        self.attempts = attempts
        self.timeouts = timeouts
    }

    /// A failure a worker can act on, in one line.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public enum Kind: Sendable, Equatable {
            /// No answer: no connection, a timeout, a dropped connection, or the server said 5xx.
            case unreachable
            /// The token or the access was refused (401, 403).
            case refused
            /// The server refused this request for what it holds (another 4xx); other requests may go through.
            case rejected
        }

        public var kind: Kind
        public var message: String
        /// The HTTP status, when the server answered.
        public var status: Int?
        public var description: String { message }
    }

    public func listing() async throws -> ReplicaListing {
        try await request("GET", "v1/replicas", as: ReplicaListing.self)
    }

    func page(_ replica: String, epoch: String?, since: Int64, limit: Int) async throws -> ChangePage {
        try await request("GET", Self.changesPath(replica, epoch: epoch, since: since, limit: limit), as: ChangePage.self)
    }

    func commonPage(epoch: String?, since: Int64, limit: Int) async throws -> CommonPage {
        try await request("GET", Self.changesPath("common", epoch: epoch, since: since, limit: limit), as: CommonPage.self)
    }

    private static func changesPath(_ replica: String, epoch: String?, since: Int64, limit: Int) -> String {
        var path = "v1/replicas/\(replica)/changes?since=\(since)&limit=\(limit)"
        if let epoch { path += "&epoch=\(epoch)" }
        return path
    }

    func positions() async throws -> PositionListing {
        try await request("GET", "v1/positions", as: PositionListing.self)
    }

    /// `resent`: changes accepted before and sent again, unconfirmed by the master (``PushRequest/resent``).
    func push(_ changes: [WorkerChange], to replica: String, resent: Bool = false) async throws -> [WorkerChangeResult] {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        let body = try encoder.encode(PushRequest(changes: changes, resent: resent))
        return try await request("POST", "v1/replicas/\(replica)/changes", body: body, as: PushResponse.self).results
    }

    /// Fails fast, within ``Timeouts/connect``, when no TCP connection to the server can be opened.
    func checkReachable() async throws {
        let (host, port) = (server.host ?? "localhost", server.port ?? (server.scheme == "https" ? 443 : 80))
        let limit = timeouts.connect
        let server = self.server.absoluteString
        let unreachable = { @Sendable (reason: String) in
            Failure(kind: .unreachable, message: "cannot reach \(server) (\(reason)); your changes stay queued")
        }
        let reason = try await withDeadline(limit, timeout: { unreachable("no connection within \(limit)") }) {
            await TCPProbe.connect(host: host, port: port, within: limit)
        }
        if let reason { throw unreachable(reason) }
    }

    private func request<T: Decodable>(_ method: String, _ path: String, body: Data? = nil, as type: T.Type) async throws -> T {
        let answer = try await exchange(method, path, body: body, headers: body == nil ? [:] : ["Content-Type": "application/json"])
        do {
            return try TeamworkJSON.decoder().decode(type, from: answer.data)
        } catch {
            throw Failure(
                kind: .unreachable, message: "the server's answer to \(path) could not be read; your changes stay queued",
                status: answer.response.statusCode)
        }
    }

    /// One request, with the deadline and the retries every request has; the answer when its
    /// status is 2xx or one of `also`, else the ``Failure`` its status means.
    private func exchange(
        _ method: String, _ path: String, body: Data? = nil, headers: [String: String] = [:],
        also: Set<Int> = []
    ) async throws -> (data: Data, response: HTTPURLResponse) {
        let request = try makeRequest(method, path, body: body, headers: headers, timeout: timeouts.request)
        let limit = timeouts.request
        let server = self.server.absoluteString
        do {
            return try await Retrying(Backoff(initial: .milliseconds(500), maximum: .seconds(4), jitter: .full))
                .upTo(max(1, attempts), retryable: { $0 is Transient }) { _ in
                    let answer: (Data, URLResponse)
                    do {
                        answer = try await withDeadline(
                            limit,
                            timeout: {
                                Failure(
                                    kind: .unreachable,
                                    message:
                                        "the server at \(server) did not answer within \(limit); your changes stay queued")
                            }
                        ) { [request] in
                            try await HTTPFetch.data(for: request)
                        }
                    } catch let failure as Failure {
                        throw failure
                    } catch is CancellationError {
                        throw CancellationError()
                    } catch {
                        throw Transient(
                            failure: Failure(
                                kind: .unreachable,
                                message: "cannot reach \(server) (\(error.localizedDescription)); your changes stay queued"))
                    }
                    guard let response = answer.1 as? HTTPURLResponse else {
                        throw Transient(
                            failure: Failure(kind: .unreachable, message: "no HTTP answer from \(server); your changes stay queued"))
                    }
                    if (200..<300).contains(response.statusCode) || also.contains(response.statusCode) { return (answer.0, response) }
                    throw Self.failure(answer, path: path, server: server, transient: { Transient(failure: $0) })
                }
        } catch let transient as Transient {
            throw transient.failure
        }
    }

    /// A request to `path` with the token, its headers and body, and its deadline.
    private func makeRequest(
        _ method: String, _ path: String, body: Data? = nil, headers: [String: String] = [:],
        timeout: Duration
    ) throws -> URLRequest {
        guard let url = URL(string: path, relativeTo: server) else {
            throw Failure(kind: .rejected, message: "cannot form a request for \(path)")
        }
        var request = URLRequest(url: url, timeoutInterval: Self.seconds(timeout))
        request.httpMethod = method
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        return request
    }

    /// Live mode as a stream (`stream=N`): each page of `replica` with news, one line each, as the
    /// server sends it, from `since` on and for `duration` (then the sequence ends, and the
    /// caller opens the next). Not retried: the caller syncs again after a failure. The
    /// transfer's own deadline is `duration` plus the request timeout.
    func follow(_ replica: String, epoch: String?, since: Int64, limit: Int, for duration: Duration) -> AsyncThrowingStream<Data, any Error>
    {
        let path = Self.changesPath(replica, epoch: epoch, since: since, limit: limit) + "&stream=\(duration.components.seconds)"
        let request: URLRequest
        do {
            request = try makeRequest("GET", path, timeout: duration + timeouts.request)
        } catch {
            return AsyncThrowingStream { $0.finish(throwing: error) }
        }
        let server = self.server.absoluteString
        let lines = Self.streams.lines(request)
        // Failures as every other request says them.
        return AsyncThrowingStream { continuation in
            let reading = Task {
                do {
                    for try await line in lines { continuation.yield(line) }
                    continuation.finish()
                } catch let refused as LineStreams.Refused {
                    continuation.finish(
                        throwing: Self.failure((refused.body, refused.response), path: path, server: server, transient: { $0 }))
                } catch {
                    continuation.finish(
                        throwing: Failure(
                            kind: .unreachable,
                            message: "cannot reach \(server) (\(error.localizedDescription)); your changes stay queued"))
                }
            }
            continuation.onTermination = { _ in reading.cancel() }
        }
    }

    static let streams = LineStreams()

    /// A failure worth another attempt: no answer, too many requests, a server restarting.
    private struct Transient: Error {
        var failure: Failure
    }

    /// The failure a status other than 2xx means (those worth another attempt wrapped by `transient`).
    private static func failure(
        _ answer: (Data, URLResponse), path: String, server: String,
        transient: (Failure) -> any Error
    ) -> any Error {
        let (data, response) = answer
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        switch status {
        case 300..<400:
            let target = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Location") ?? "elsewhere"
            return Failure(
                kind: .rejected,
                message: "the server sent the request on to \(target); not followed, so that your token "
                    + "goes nowhere but \(server)", status: status)
        case 401:
            return Failure(
                kind: .refused, message: "the server refused the token; ask your manager for a new one and run `teamwork-worker login`",
                status: status)
        case 403:
            return Failure(kind: .refused, message: "the server refused access to \(path)", status: status)
        case 429, 502, 503, 504:
            // Too many requests at once, a gateway or a server that is restarting, or a central store that is away:
            // try again shortly.
            return transient(
                Failure(
                    kind: .unreachable, message: "the server answered \(status): \(errorMessage(data)); your changes stay queued",
                    status: status))
        case 400..<500:
            return Failure(kind: .rejected, message: "the server refused it (\(status)): \(errorMessage(data))", status: status)
        default:
            return Failure(
                kind: .unreachable, message: "the server answered \(status): \(errorMessage(data)); your changes stay queued",
                status: status)
        }
    }

    /// How much of blob `digest` the server holds, and whether it is whole (`HEAD /v1/blobs/{sha256}`).
    func blobState(_ digest: String) async throws -> (offset: Int64, complete: Bool) {
        let answer = try await exchange("HEAD", "v1/blobs/\(digest)")
        return Self.blobState(answer.response)
    }

    /// Sends `bytes`, the piece of blob `digest` (of `length` bytes in all) that starts at `offset`, as proof
    /// for task `task` (`Upload-For`); returns where the server then stands. A server that holds another
    /// offset answers it (409), not an error.
    func sendBlob(
        _ digest: String, offset: Int64, length: Int64, _ bytes: Data, for task: Int64? = nil
    ) async throws -> (offset: Int64, complete: Bool) {
        var headers = [
            "Content-Type": "application/offset+octet-stream", "Upload-Offset": String(offset), "Upload-Length": String(length),
        ]
        if let task { headers["Upload-For"] = String(task) }
        let answer = try await exchange("PATCH", "v1/blobs/\(digest)", body: bytes, headers: headers, also: [409])
        return Self.blobState(answer.response)
    }

    private static func blobState(_ response: HTTPURLResponse) -> (offset: Int64, complete: Bool) {
        (
            Int64(response.value(forHTTPHeaderField: "Upload-Offset") ?? "") ?? 0,
            response.value(forHTTPHeaderField: "Upload-Complete") == "?1"
        )
    }

    /// No cookies, no cache, and no redirects: a redirect would carry the
    /// `Authorization` header to wherever it points. No cache at all (`.ephemeral`
    /// alone keeps one in memory): on Linux a request cancelled as it fails traps
    /// in FoundationNetworking ("a task that in not in the registry") when the
    /// session has a URL cache, whose lookup runs on a queue of its own, unordered
    /// against the task leaving the registry (URLSessionCancelTests reproduces it).
    static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    private static func errorMessage(_ data: Data) -> String {
        struct Body: Decodable {
            struct Inner: Decodable { var message: String? }
            var error: Inner
        }
        return (try? JSONDecoder().decode(Body.self, from: data))?.error.message ?? "no details"
    }
}
