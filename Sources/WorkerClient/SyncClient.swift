import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import TeamDatabase
import TeamworkModel

/// Talks to the sync endpoint: lists, pulls and pushes, with retries and backoff
/// when the server cannot be reached.
public struct SyncClient: Sendable {
    public var server: URL
    public var token: String
    /// Attempts per request when the server cannot be reached (waiting 0.5 s, 1 s, 2 s ... between).
    public var attempts: Int

    public init(server: URL, token: String, attempts: Int = 3) {
        self.server = server
        self.token = token
        self.attempts = attempts
    }

    /// A failure a worker can act on, in one line.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public enum Kind: Sendable { case unreachable, refused, server }
        public var kind: Kind
        public var message: String
        public var description: String { message }
    }

    struct Listing: Decodable {
        struct Entry: Decodable {
            var name: String
            var kind: String
            var slug: String?
            var title: String
            var available: Bool
        }

        var person: Int64
        var replicas: [Entry]
    }

    struct PushResponse: Decodable {
        var results: [WorkerChangeResult]
    }

    func listing() async throws -> Listing {
        try await request("GET", "v1/replicas", as: Listing.self)
    }

    func page(_ replica: String, epoch: String?, since: Int64, limit: Int) async throws -> ChangePage {
        var path = "v1/replicas/\(replica)/changes?since=\(since)&limit=\(limit)"
        if let epoch { path += "&epoch=\(epoch)" }
        return try await request("GET", path, as: ChangePage.self)
    }

    func commonPage(epoch: String?, since: Int64, limit: Int) async throws -> CommonPage {
        var path = "v1/replicas/common/changes?since=\(since)&limit=\(limit)"
        if let epoch { path += "&epoch=\(epoch)" }
        return try await request("GET", path, as: CommonPage.self)
    }

    func push(_ changes: [WorkerChange], to replica: String) async throws -> [WorkerChangeResult] {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        let body = try encoder.encode(["changes": changes])
        return try await request("POST", "v1/replicas/\(replica)/changes", body: body, as: PushResponse.self).results
    }

    private func request<T: Decodable>(_ method: String, _ path: String, body: Data? = nil, as type: T.Type) async throws -> T {
        guard let url = URL(string: path, relativeTo: server) else {
            throw Failure(kind: .server, message: "cannot form a request for \(path)")
        }
        var request = URLRequest(url: url, timeoutInterval: 30)
        request.httpMethod = method
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        var delay = 0.5
        for attempt in 1...max(1, attempts) {
            do {
                let (data, response) = try await URLSession.shared.data(for: request)
                let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                switch status {
                case 200..<300:
                    return try TeamworkJSON.decoder().decode(type, from: data)
                case 401:
                    throw Failure(kind: .refused, message: "the server refused the token; ask your manager for a new one and run `teamwork-worker login`")
                case 403:
                    throw Failure(kind: .refused, message: "the server refused access to \(path)")
                default:
                    throw Failure(kind: .server, message: "the server answered \(status): \(Self.errorMessage(data))")
                }
            } catch let failure as Failure {
                throw failure
            } catch {
                if attempt == attempts {
                    throw Failure(kind: .unreachable, message: "cannot reach \(server.absoluteString) (\(error.localizedDescription)); your changes stay queued")
                }
                try await Task.sleep(for: .milliseconds(Int(delay * 1000)))
                delay *= 2
            }
        }
        throw Failure(kind: .unreachable, message: "cannot reach \(server.absoluteString)")
    }

    private static func errorMessage(_ data: Data) -> String {
        struct Body: Decodable {
            struct Inner: Decodable { var message: String? }
            var error: Inner
        }
        return (try? JSONDecoder().decode(Body.self, from: data))?.error.message ?? "no details"
    }
}
