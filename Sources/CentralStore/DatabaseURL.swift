import Foundation
import NIOSSL
import PostgresNIO
import TeamworkModel

/// Where the central store is, parsed from the usual `postgres://` URL form:
///
///     postgres://user:password@host:5432/teamwork?sslmode=require
///     postgres://user:password@host/teamwork?sslmode=verify-full&sslrootcert=/etc/teamwork/db-ca.pem
///     postgres://user@/teamwork?host=/var/run/postgresql      (unix socket folder)
///     postgres://user:password@h1:5432,h2:5432/teamwork?target_session_attrs=read-write
///
/// Several hosts (libpq's syntax and meaning) are tried in order, each connection to the first
/// that answers and, with `target_session_attrs=read-write` (or `primary`), takes writes: after a
/// failover the service finds the new primary by itself (docs/operations.md, "A PostgreSQL
/// failover"). `host=` and `port=` in the query take comma-separated lists too.
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

    /// Which server a connection may stay on (libpq's `target_session_attrs`): `any` takes the first
    /// that answers; `read-write` one whose sessions take writes (`transaction_read_only` off);
    /// `primary` one not in recovery. The others of libpq's (read-only, standby, prefer-standby)
    /// are refused: the service writes.
    public enum TargetSession: String, Sendable, Equatable {
        case any
        case readWrite = "read-write"
        case primary
    }

    /// The hosts, in the order they are tried (at least one).
    public var endpoints: [Endpoint]
    public var username: String
    public var password: String?
    public var database: String
    public var tlsMode: TLSMode
    /// A PEM file of the certificate authorities to trust instead of the system's.
    public var rootCertificate: String?
    public var targetSession: TargetSession

    /// The first host: the only one, unless several are given.
    public var endpoint: Endpoint {
        get { endpoints[0] }
        set { endpoints = [newValue] }
    }

    public init(
        endpoint: Endpoint, username: String, password: String? = nil, database: String, tlsMode: TLSMode = .disable,
        rootCertificate: String? = nil
    ) {
        self.init(
            endpoints: [endpoint], username: username, password: password, database: database, tlsMode: tlsMode,
            rootCertificate: rootCertificate)
    }

    public init(
        endpoints: [Endpoint], username: String, password: String? = nil, database: String, tlsMode: TLSMode = .disable,
        rootCertificate: String? = nil, targetSession: TargetSession = .any
    ) {
        precondition(!endpoints.isEmpty, "a database URL has at least one host")
        self.endpoints = endpoints
        self.username = username
        self.password = password
        self.database = database
        self.tlsMode = tlsMode
        self.rootCertificate = rootCertificate
        self.targetSession = targetSession
    }

    /// Parses a URL; the error names what is wrong without echoing the password.
    public init(parsing text: String) throws {
        let shape = TeamworkError(.configuration, "database URL must look like postgres://user:password@host:5432/database")
        // URLComponents takes one host: a list (h1:5432,h2:5433) is read here and the first stands in for it.
        let (single, listed) = try Self.splitHostList(text)
        guard let components = URLComponents(string: single),
            let scheme = components.scheme, scheme == "postgres" || scheme == "postgresql"
        else { throw shape }
        let query = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last }
        )
        let ports = try (query["port"] ?? "").split(separator: ",", omittingEmptySubsequences: false).map { text -> Int? in
            if text.isEmpty { return nil }
            guard let port = Int(text), (1...65_535).contains(port) else {
                throw TeamworkError(.configuration, "database URL port must be a number from 1 to 65535")
            }
            return port
        }
        func port(_ index: Int) -> Int { (ports.count == 1 ? ports[0] : index < ports.count ? ports[index] : nil) ?? 5432 }
        // Query parameters win over the URI's parts, as in libpq.
        if let hosts = query["host"].map({ $0.split(separator: ",").map(String.init) }), !hosts.isEmpty, listed == nil {
            guard ports.count <= 1 || ports.count == hosts.count else {
                throw TeamworkError(.configuration, "database URL has \(hosts.count) hosts but \(ports.count) ports")
            }
            endpoints = hosts.enumerated().map { index, host in
                host.hasPrefix("/") ? .unixSocket(path: "\(host)/.s.PGSQL.\(port(index))") : .tcp(host: host, port: port(index))
            }
        } else if let listed {
            guard ports.count <= 1 || ports.count == listed.count else {
                throw TeamworkError(.configuration, "database URL has \(listed.count) hosts but \(ports.count) ports")
            }
            endpoints = listed.enumerated().map { index, host in .tcp(host: host.host, port: host.port ?? port(index)) }
        } else if let host = components.host, !host.isEmpty {
            endpoints = [.tcp(host: host, port: components.port ?? port(0))]
        } else {
            throw TeamworkError(.configuration, "database URL needs a host, or ?host=/socket/folder for a unix socket")
        }
        let sockets = endpoints.filter { if case .unixSocket = $0 { true } else { false } }.count
        guard sockets == 0 || sockets == endpoints.count else {
            throw TeamworkError(.configuration, "database URL hosts must be all unix socket folders or all network hosts")
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
            // Plain text stays possible only where nothing crosses a network: sockets and loopback, every host of them.
            let local = endpoints.allSatisfy { endpoint in
                switch endpoint {
                case .unixSocket: true
                case .tcp(let host, _): Self.isLoopback(host)
                }
            }
            let sockets = endpoints.allSatisfy { if case .unixSocket = $0 { true } else { false } }
            tlsMode = sockets ? .disable : local ? .prefer : .require
        }
        rootCertificate = query["sslrootcert"].flatMap { $0.isEmpty ? nil : $0 }
        if let rootCertificate, !FileManager.default.isReadableFile(atPath: rootCertificate) {
            throw TeamworkError(.configuration, "database URL sslrootcert \(rootCertificate) cannot be read")
        }
        guard let target = TargetSession(rawValue: query["target_session_attrs"] ?? "any") else {
            throw TeamworkError(.configuration, "database URL target_session_attrs must be any, read-write or primary (the service writes)")
        }
        targetSession = target
    }

    /// `text` with a list of hosts in its authority (`h1:5432,[::1]:5433`) cut to the first, and
    /// the list; `nil` for one host.
    static func splitHostList(_ text: String) throws -> (String, [(host: String, port: Int?)]?) {
        guard let scheme = text.range(of: "://") else { return (text, nil) }
        let rest = text[scheme.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let hostsStart = authority.lastIndex(of: "@").map { authority.index(after: $0) } ?? authority.startIndex
        let hostList = authority[hostsStart...]
        guard hostList.contains(",") else { return (text, nil) }
        let hosts = try hostList.split(separator: ",", omittingEmptySubsequences: false).map { entry -> (String, Int?) in
            var host = Substring(entry)
            var port: Int?
            if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
                let after = host[host.index(after: close)...]
                if after.hasPrefix(":") { port = Int(after.dropFirst()) }
                host = host[host.index(after: host.startIndex)..<close]
                if !after.isEmpty && port == nil { throw TeamworkError(.configuration, "database URL has a host with a bad port") }
            } else if let colon = host.lastIndex(of: ":") {
                guard let number = Int(host[host.index(after: colon)...]), (1...65_535).contains(number) else {
                    throw TeamworkError(.configuration, "database URL has a host with a bad port")
                }
                port = number
                host = host[..<colon]
            }
            guard !host.isEmpty else { throw TeamworkError(.configuration, "database URL has an empty host in its list") }
            return (String(host), port)
        }
        let first = hostList.split(separator: ",")[0]
        return (String(text[..<hostsStart]) + first + String(text[authorityEnd...]), hosts)
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
        let target = targetSession == .any ? "" : "&target_session_attrs=\(targetSession.rawValue)"
        let sockets = endpoints.compactMap { endpoint -> (folder: String, port: String)? in
            guard case .unixSocket(let path) = endpoint else { return nil }
            return ((path as NSString).deletingLastPathComponent, path.split(separator: ".").last.map(String.init) ?? "5432")
        }
        if sockets.count == endpoints.count {
            let tls = tlsMode == .disable ? "" : "&sslmode=\(tlsMode.rawValue)"
            return "postgres://\(user)\(secret)@/\(name)?host=\(sockets.map(\.folder).joined(separator: ","))"
                + "&port=\(sockets.map(\.port).joined(separator: ","))\(tls)\(target)"
        }
        let root =
            rootCertificate.map { "&sslrootcert=" + ($0.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? $0) } ?? ""
        return "postgres://\(user)\(secret)@\(hostList)/\(name)?sslmode=\(tlsMode.rawValue)\(root)\(target)"
    }

    /// The TCP hosts as the authority lists them (`h1:5432,[::1]:5433`); sockets by their folder.
    private var hostList: String {
        endpoints.map { endpoint in
            switch endpoint {
            case .tcp(let host, let port): "\(host.contains(":") ? "[\(host)]" : host):\(port)"
            case .unixSocket(let path): (path as NSString).deletingLastPathComponent
            }
        }.joined(separator: ",")
    }

    /// Where this points, for messages: never includes the password.
    public var displayString: String {
        switch (endpoints.count, endpoint) {
        case (1, .unixSocket(let path)): "\(username)@\(path) database \(database)"
        default: "\(username)@\(hostList)/\(database)"
        }
    }

    /// How to connect to one of the hosts (the first unless said).
    func connectionConfiguration(to endpoint: Endpoint? = nil) throws -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        switch endpoint ?? self.endpoint {
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

    /// The same place and settings for a pool (``StorePool``), to one of the hosts (the first unless said).
    func clientConfiguration(to endpoint: Endpoint? = nil) -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        switch endpoint ?? self.endpoint {
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
