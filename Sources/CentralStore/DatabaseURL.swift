import Foundation
import NIOSSL
import PostgresNIO
import TeamworkModel

/// Where the central store is, parsed from the usual `postgres://` URL form:
///
///     postgres://user:password@host:5432/teamwork?sslmode=require
///     postgres://user:password@host/teamwork?sslmode=verify-full&sslrootcert=/etc/teamwork/db-ca.pem
///     postgres://user@/teamwork?host=/var/run/postgresql      (unix socket folder)
///
/// `sslmode` is `disable` (the default for unix sockets), `prefer` (the
/// default for a loopback address: nothing crosses a network) or `require`
/// (the default for any other host, so that nobody on the path can talk the
/// connection down to plain text). `verify-ca` and `verify-full` mean
/// `require`: a TLS connection is always verified, chain and host name,
/// against the system's certificate authorities, or against `sslrootcert`.
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
    /// A PEM file of the certificate authorities to trust instead of the system's.
    public var rootCertificate: String?

    public init(
        endpoint: Endpoint, username: String, password: String? = nil, database: String, tlsMode: TLSMode = .disable,
        rootCertificate: String? = nil
    ) {
        self.endpoint = endpoint
        self.username = username
        self.password = password
        self.database = database
        self.tlsMode = tlsMode
        self.rootCertificate = rootCertificate
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
            default: throw TeamworkError(.configuration, "database URL sslmode must be disable, prefer, require or verify-full")
            }
        } else {
            switch endpoint {
            case .unixSocket: tlsMode = .disable
            case .tcp(let host, _): tlsMode = Self.isLoopback(host) ? .prefer : .require
            }
        }
        rootCertificate = query["sslrootcert"].flatMap { $0.isEmpty ? nil : $0 }
        if let rootCertificate, !FileManager.default.isReadableFile(atPath: rootCertificate) {
            throw TeamworkError(.configuration, "database URL sslrootcert \(rootCertificate) cannot be read")
        }
    }

    /// A loopback address written as such: `localhost`, 127.0.0.0/8, `::1`.
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.lowercased()
        if bare == "localhost" || bare == "::1" || bare == "[::1]" { return true }
        let octets = bare.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
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
            let root =
                rootCertificate.map { "&sslrootcert=" + ($0.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? $0) } ?? ""
            return "postgres://\(user)\(secret)@\(host):\(port)/\(name)?sslmode=\(tlsMode.rawValue)\(root)"
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
            case .prefer: tls = .prefer(try NIOSSLContext(configuration: verifiedTLS))
            case .require: tls = .require(try NIOSSLContext(configuration: verifiedTLS))
            }
            configuration = .init(host: host, port: port, username: username, password: password, database: database, tls: tls)
        }
        configuration.options.connectTimeout = .seconds(10)
        return configuration
    }

    /// The same place and settings for a pool (``StorePool``).
    func clientConfiguration() -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        switch endpoint {
        case .unixSocket(let path):
            configuration = .init(unixSocketPath: path, username: username, password: password, database: database)
        case .tcp(let host, let port):
            let tls: PostgresClient.Configuration.TLS
            switch tlsMode {
            case .disable: tls = .disable
            case .prefer: tls = .prefer(verifiedTLS)
            case .require: tls = .require(verifiedTLS)
            }
            configuration = .init(host: host, port: port, username: username, password: password, database: database, tls: tls)
        }
        configuration.options.connectTimeout = .seconds(10)
        return configuration
    }

    /// Verified, chain and host name, always: against sslrootcert when given, else the system's roots.
    private var verifiedTLS: TLSConfiguration {
        var client = TLSConfiguration.makeClientConfiguration()
        if let rootCertificate { client.trustRoots = .file(rootCertificate) }
        return client
    }
}
