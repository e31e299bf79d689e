import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore

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

    /// `method uri` to 127.0.0.1:`port`, with `headers` (e.g. Authorization) and an optional JSON body.
    public static func request(
        _ method: HTTPRequest.Method = .get, port: Int, _ uri: String, headers: [String: String] = [:], body: Data? = nil,
        timeout: Duration = .seconds(30)
    ) async throws -> Response {
        var fields = HTTPFields()
        for (name, value) in headers {
            if let field = HTTPField.Name(name) { fields[field] = value }
        }
        if body != nil, fields[.contentType] == nil { fields[.contentType] = "application/json" }
        let request = TestClient.Request(uri, method: method, authority: "127.0.0.1:\(port)", headers: fields,
                                         body: body.map { ByteBuffer(bytes: $0) })
        let answer = try await withThrowingTaskGroup(of: TestClient.Response?.self) { group in
            group.addTask {
                try await TestClient.withClient(host: "127.0.0.1", port: port, configuration: .init(timeout: timeout)) {
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
        return Response(status: answer.head.status.code, headers: headers,
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
        guard let value = text.split(separator: "\n").first(where: { $0.hasPrefix(name + " ") })
            .flatMap({ Int($0.split(separator: " ")[1]) }) else {
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
