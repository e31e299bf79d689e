import Foundation
import NIOSSL
import PostgresNIO
import TeamworkModel

/// Where the central store is, parsed from the usual `postgres://` URL form:
///
///     postgres://user:password@host:5432/teamwork?sslmode=require
///     postgres://user@/teamwork?host=/var/run/postgresql      (unix socket folder)
///
/// `sslmode` is `disable` (the default for unix sockets), `prefer` (the default
/// over TCP) or `require`.
public struct DatabaseURL: Sendable, Equatable {
    public enum Endpoint: Sendable, Equatable {
        case tcp(host: String, port: Int)
        /// The full path of the socket file, `<folder>/.s.PGSQL.<port>`.
        case unixSocket(path: String)
    }

    public enum TLSMode: String, Sendable, Equatable {
        case disable, prefer, require
    }

    public var endpoint: Endpoint
    public var username: String
    public var password: String?
    public var database: String
    public var tlsMode: TLSMode

    public init(endpoint: Endpoint, username: String, password: String? = nil, database: String, tlsMode: TLSMode = .disable) {
        self.endpoint = endpoint
        self.username = username
        self.password = password
        self.database = database
        self.tlsMode = tlsMode
    }

    /// Parses a URL; the error names what is wrong without echoing the password.
    public init(parsing text: String) throws {
        guard let components = URLComponents(string: text),
              let scheme = components.scheme, scheme == "postgres" || scheme == "postgresql"
        else {
            throw TeamworkError(.configuration, "database URL must look like postgres://user:password@host:5432/database")
        }
        let query = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last }
        )
        let port = components.port ?? Int(query["port"] ?? "") ?? 5432
        let socketFolder = query["host"].flatMap { $0.hasPrefix("/") ? $0 : nil }
        if let socketFolder {
            endpoint = .unixSocket(path: "\(socketFolder)/.s.PGSQL.\(port)")
        } else if let host = components.host, !host.isEmpty {
            endpoint = .tcp(host: host, port: port)
        } else {
            throw TeamworkError(.configuration, "database URL needs a host, or ?host=/socket/folder for a unix socket")
        }
        username = components.user.flatMap { $0.removingPercentEncoding } ?? query["user"] ?? "postgres"
        password = components.password.flatMap { $0.removingPercentEncoding } ?? query["password"]
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        database = path.removingPercentEncoding ?? path
        if database.isEmpty { database = username }
        if let mode = query["sslmode"] {
            switch mode {
            case "disable", "allow": tlsMode = .disable
            case "prefer": tlsMode = .prefer
            case "require", "verify-ca", "verify-full": tlsMode = .require
            default: throw TeamworkError(.configuration, "database URL sslmode must be disable, prefer or require")
            }
        } else {
            if case .unixSocket = endpoint { tlsMode = .disable } else { tlsMode = .prefer }
        }
    }

    /// The same place with another database name, e.g. `postgres` for administration.
    public func with(database: String) -> DatabaseURL {
        var copy = self
        copy.database = database
        return copy
    }

    /// The `postgres://` form that ``init(parsing:)`` reads back, password
    /// included: for handing to another process, never for messages.
    public var connectionString: String {
        let user = username.addingPercentEncoding(withAllowedCharacters: .urlUserAllowed) ?? username
        let secret = password.map { ":" + ($0.addingPercentEncoding(withAllowedCharacters: .urlPasswordAllowed) ?? $0) } ?? ""
        let name = database.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? database
        switch endpoint {
        case .unixSocket(let path):
            let folder = (path as NSString).deletingLastPathComponent
            let port = path.split(separator: ".").last.map(String.init) ?? "5432"
            return "postgres://\(user)\(secret)@/\(name)?host=\(folder)&port=\(port)"
        case .tcp(let host, let port):
            return "postgres://\(user)\(secret)@\(host):\(port)/\(name)?sslmode=\(tlsMode.rawValue)"
        }
    }

    /// Where this points, for messages: never includes the password.
    public var displayString: String {
        switch endpoint {
        case .tcp(let host, let port): "\(username)@\(host):\(port)/\(database)"
        case .unixSocket(let path): "\(username)@\(path) database \(database)"
        }
    }

    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        switch endpoint {
        case .unixSocket(let path):
            configuration = .init(unixSocketPath: path, username: username, password: password, database: database)
        case .tcp(let host, let port):
            let tls: PostgresConnection.Configuration.TLS
            switch tlsMode {
            case .disable: tls = .disable
            case .prefer: tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .require: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
            configuration = .init(host: host, port: port, username: username, password: password, database: database, tls: tls)
        }
        configuration.options.connectTimeout = .seconds(10)
        return configuration
    }
}
