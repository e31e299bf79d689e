import Crypto
import Egress
import Foundation
import NIOHTTP1
import TeamworkModel

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// Where an S3-compatible bucket is: `s3://BUCKET?endpoint=URL&region=R`, with the keys from the
/// environment or a credentials file, never from the command line (docs/operations.md).
public struct S3Location: Sendable, Equatable, CustomStringConvertible {
    public var bucket: String
    /// The store's address, `http(s)://host[:port]`: requests go path-style, `ENDPOINT/BUCKET/KEY`.
    public var endpoint: URL
    public var region: String
    public var credentials: S3Credentials

    public init(bucket: String, endpoint: URL, region: String, credentials: S3Credentials) {
        (self.bucket, self.endpoint, self.region, self.credentials) = (bucket, endpoint, region, credentials)
    }

    public var description: String { "s3://\(bucket) at \(endpoint.absoluteString)" }

    /// Reads `s3://BUCKET?endpoint=URL&region=R`; `nil` when `text` is not an `s3://` address at all.
    /// The keys come from `environment` (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), else from the
    /// credentials file (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials; profile AWS_PROFILE, else
    /// default), as the AWS tools read them.
    public static func parse(_ text: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> S3Location? {
        guard text.lowercased().hasPrefix("s3://") else { return nil }
        guard let components = URLComponents(string: text), let bucket = components.host, !bucket.isEmpty else {
            throw TeamworkError(.usage, "an object store is named s3://BUCKET?endpoint=URL&region=REGION")
        }
        guard components.user == nil, components.password == nil else {
            throw TeamworkError(.usage, "keys never go in the object store's address: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
        }
        // S3's bucket names: 3 to 63 lowercase letters, digits, dots and hyphens.
        guard (3...63).contains(bucket.count),
            bucket.utf8.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == 46 || $0 == 45 })
        else { throw TeamworkError(.usage, "\(bucket) is not a bucket name (3 to 63 lowercase letters, digits, dots and hyphens)") }
        guard components.path.isEmpty || components.path == "/" else {
            throw TeamworkError(.usage, "the object store's address names a bucket, not a folder in it: s3://\(bucket)?endpoint=…")
        }
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] {
            guard ["endpoint", "region"].contains(item.name), let value = item.value, query[item.name] == nil else {
                throw TeamworkError(.usage, "the object store's address takes endpoint= and region= once each, not \(item.name)")
            }
            query[item.name] = value
        }
        let region = query["region"] ?? environment["AWS_REGION"] ?? "us-east-1"
        let endpointText = query["endpoint"] ?? "https://s3.\(region).amazonaws.com"
        guard let endpoint = URL(string: endpointText), let scheme = endpoint.scheme?.lowercased(), ["http", "https"].contains(scheme),
            endpoint.host?.isEmpty == false, endpoint.path.isEmpty || endpoint.path == "/", endpoint.query == nil, endpoint.user == nil,
            endpoint.password == nil
        else { throw TeamworkError(.usage, "the object store's endpoint is an http(s)://host[:port] address, not \(endpointText)") }
        guard region.utf8.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == 45 }), !region.isEmpty else {
            throw TeamworkError(.usage, "\(region) is not a region name")
        }
        return S3Location(bucket: bucket, endpoint: endpoint, region: region, credentials: try S3Credentials.find(environment))
    }
}

/// The keys requests are signed with. Printed, it shows the access key only.
public struct S3Credentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public var description: String { "S3Credentials(\(accessKey), secret withheld)" }
    public var debugDescription: String { description }

    public var accessKey: String
    public var secretKey: String
    public var sessionToken: String?

    public init(accessKey: String, secretKey: String, sessionToken: String? = nil) {
        (self.accessKey, self.secretKey, self.sessionToken) = (accessKey, secretKey, sessionToken)
    }

    /// From the environment, else from the shared credentials file, as the AWS tools find them.
    static func find(_ environment: [String: String]) throws -> S3Credentials {
        if let access = environment["AWS_ACCESS_KEY_ID"], let secret = environment["AWS_SECRET_ACCESS_KEY"], !access.isEmpty,
            !secret.isEmpty
        {
            return S3Credentials(
                accessKey: access, secretKey: secret, sessionToken: environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 })
        }
        let path =
            environment["AWS_SHARED_CREDENTIALS_FILE"]
            ?? (environment["HOME"].map { $0 + "/.aws/credentials" } ?? "")
        let profile = environment["AWS_PROFILE"] ?? "default"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw TeamworkError(
                .configuration,
                "no keys for the object store: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_SHARED_CREDENTIALS_FILE")
        }
        var section = ""
        var values: [String: String] = [:]
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("[") && line.hasSuffix("]") {
                section = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
            } else if section == profile, let equals = line.firstIndex(of: "="), !line.hasPrefix("#"), !line.hasPrefix(";") {
                values[line[..<equals].trimmingCharacters(in: .whitespaces)] = line[line.index(after: equals)...].trimmingCharacters(
                    in: .whitespaces)
            }
        }
        guard let access = values["aws_access_key_id"], let secret = values["aws_secret_access_key"] else {
            throw TeamworkError(.configuration, "\(path) has no aws_access_key_id and aws_secret_access_key in [\(profile)]")
        }
        return S3Credentials(accessKey: access, secretKey: secret, sessionToken: values["aws_session_token"])
    }
}

/// An object the store listed: its key, size and when it was last written.
public struct S3Object: Sendable, Equatable {
    public var key: String
    public var size: Int64
    public var modified: Date
}

/// A failure of the object store: its status and S3's error code when it answered.
public struct S3Failure: Error, CustomStringConvertible, Sendable {
    public var status: Int?
    public var code: String?
    public var description: String

    public init(status: Int?, code: String?, description: String) {
        (self.status, self.code, self.description) = (status, code, description)
    }
}

/// The part of S3's API Teamwork uses (docs/operations.md lists it), signed with AWS Signature
/// Version 4, each request through the egress client: one connection, one deadline, an answer read
/// to a bound, the operator-named address resolved once. Keys are `[a-z0-9/-]` only: no key needs
/// escaping beyond S3's own rules.
public struct S3Client: Sendable {
    public let location: S3Location
    /// Each request's whole deadline.
    public var timeout: Duration = .seconds(30)
    /// Connections to the store open at once in the process (apart from webhooks' and texts').
    public let budget: EgressBudget
    public var clock: @Sendable () -> Date = { Date() }

    public init(location: S3Location, connections: Int = 32) {
        self.location = location
        budget = EgressBudget(limit: connections)
    }

    /// Writes an object whole.
    public func put(_ key: String, _ body: Data) async throws {
        _ = try await send(.PUT, key: key, body: body, expect: [200])
    }

    /// Bytes `range` of an object (all of it when `nil`), at most `limit` bytes read; `nil` when there is no such object.
    public func get(_ key: String, range: ClosedRange<Int64>? = nil, limit: Int) async throws -> Data? {
        let headers = range.map { [("Range", "bytes=\($0.lowerBound)-\($0.upperBound)")] } ?? []
        let answer = try await send(.GET, key: key, headers: headers, expect: [200, 206, 404, 416], bodyLimit: limit)
        if answer.status == 404 || answer.status == 416 { return answer.status == 416 ? Data() : nil }
        guard !answer.truncated else {
            throw S3Failure(status: answer.status, code: nil, description: "\(key) is longer than \(limit) bytes")
        }
        return answer.body
    }

    /// An object's size and time, `nil` when there is none.
    public func head(_ key: String) async throws -> S3Object? {
        let answer = try await send(.HEAD, key: key, expect: [200, 404])
        guard answer.status == 200 else { return nil }
        let length = answer.headers.first { $0.0.lowercased() == "content-length" }.flatMap { Int64($0.1) } ?? 0
        let modified = answer.headers.first { $0.0.lowercased() == "last-modified" }.flatMap { Self.httpDate.date(from: $0.1) }
        return S3Object(key: key, size: length, modified: modified ?? Date(timeIntervalSince1970: 0))
    }

    /// Removes an object (none there is no failure).
    public func delete(_ key: String) async throws {
        _ = try await send(.DELETE, key: key, expect: [200, 204, 404])
    }

    /// Every object whose key begins with `prefix`, in key order (ListObjectsV2, page by page).
    public func list(_ prefix: String) async throws -> [S3Object] {
        var objects: [S3Object] = []
        var token: String?
        repeat {
            var query = [("list-type", "2"), ("prefix", prefix)]
            if let token { query.append(("continuation-token", token)) }
            let answer = try await send(.GET, key: nil, query: query, expect: [200], bodyLimit: 8 << 20)
            guard let page = ListPage(answer.body) else {
                throw S3Failure(status: answer.status, code: nil, description: "the object store's listing of \(prefix) is not XML")
            }
            objects += page.objects
            token = page.truncated ? page.next : nil
        } while token != nil
        return objects
    }

    /// Begins a multipart upload of `key`: its upload id.
    public func createMultipart(_ key: String) async throws -> String {
        let answer = try await send(.POST, key: key, query: [("uploads", "")], expect: [200], bodyLimit: 64 << 10)
        guard let id = Self.element("UploadId", in: answer.body) else {
            throw S3Failure(status: answer.status, code: nil, description: "the store began an upload of \(key) without an id")
        }
        return id
    }

    /// Sends part `number` (from 1) of an upload: its ETag.
    public func uploadPart(_ key: String, upload: String, number: Int, _ body: Data) async throws -> String {
        let answer = try await send(
            .PUT, key: key, query: [("partNumber", String(number)), ("uploadId", upload)], body: body, expect: [200])
        guard let tag = answer.headers.first(where: { $0.0.lowercased() == "etag" })?.1 else {
            throw S3Failure(status: answer.status, code: nil, description: "the store took part \(number) of \(key) without an ETag")
        }
        return tag
    }

    /// Names the object: the parts, in order, become `key`.
    public func completeMultipart(_ key: String, upload: String, parts: [String]) async throws {
        let body =
            "<CompleteMultipartUpload>"
            + parts.enumerated().map { "<Part><PartNumber>\($0.offset + 1)</PartNumber><ETag>\(Self.escape($0.element))</ETag></Part>" }
            .joined() + "</CompleteMultipartUpload>"
        let answer = try await send(
            .POST, key: key, query: [("uploadId", upload)], body: Data(body.utf8), expect: [200], bodyLimit: 64 << 10)
        // S3 may answer 200 with an error in the body.
        if let code = Self.element("Code", in: answer.body) {
            throw S3Failure(status: answer.status, code: code, description: "completing \(key): \(code)")
        }
    }

    /// Gives an upload up: its parts are removed and no object is named.
    public func abortMultipart(_ key: String, upload: String) async throws {
        _ = try await send(.DELETE, key: key, query: [("uploadId", upload)], expect: [200, 204, 404])
    }

    /// Makes the bucket (for tests and first setup; an existing one of the caller's is fine).
    public func createBucket() async throws {
        _ = try await send(.PUT, key: nil, expect: [200, 409])
    }

    // MARK: - Requests

    func send(
        _ method: HTTPMethod, key: String?, query: [(String, String)] = [], headers extra: [(String, String)] = [], body: Data = Data(),
        expect: Set<Int>, bodyLimit: Int = 64 << 10
    ) async throws -> EgressAnswer {
        let path = "/" + location.bucket + (key.map { "/" + $0 } ?? "")
        let canonicalQuery = query.map { (Self.encode($0.0), Self.encode($0.1)) }.sorted { $0 < $1 }.map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
        var text = location.endpoint.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        guard let url = URL(string: text + path + (canonicalQuery.isEmpty ? "" : "?" + canonicalQuery)) else {
            throw S3Failure(status: nil, code: nil, description: "\(path) is not an address")
        }
        let headers = Self.signed(
            method: method.rawValue, url: url, path: path, query: canonicalQuery, headers: extra, body: body, location: location,
            at: clock())
        let request = EgressClient.Request(method: method, url: url, headers: headers, body: body)
        let answer: EgressAnswer
        do {
            answer = try await EgressClient.send(request, policy: .operatorNamed, timeout: timeout, bodyLimit: bodyLimit, budget: budget)
        } catch let failure as EgressFailure {
            throw S3Failure(status: nil, code: nil, description: "the object store \(location.endpoint.host ?? ""): \(failure.description)")
        }
        guard expect.contains(answer.status) else {
            let code = Self.element("Code", in: answer.body)
            throw S3Failure(
                status: answer.status, code: code,
                description: "the object store answered \(method.rawValue) \(key ?? location.bucket) with \(answer.status)"
                    + (code.map { " \($0)" } ?? ""))
        }
        return answer
    }

    /// The headers of a request signed with AWS Signature Version 4 (the payload's hash signed too).
    static func signed(
        method: String, url: URL, path: String, query: String, headers extra: [(String, String)], body: Data, location: S3Location,
        at now: Date
    ) -> [(String, String)] {
        let stamp = Self.stamp.string(from: now)
        let day = String(stamp.prefix(8))
        let payload = Self.hex(SHA256.hash(data: body))
        let host = EgressClient.hostHeader(url)
        var headers: [(String, String)] = [("host", host), ("x-amz-content-sha256", payload), ("x-amz-date", stamp)]
        if let token = location.credentials.sessionToken { headers.append(("x-amz-security-token", token)) }
        headers += extra.map { ($0.0.lowercased(), $0.1.trimmingCharacters(in: .whitespaces)) }
        headers.sort { $0.0 < $1.0 }
        let signedNames = headers.map(\.0).joined(separator: ";")
        let canonical = [
            method, Self.encode(path, keepSlash: true), query, headers.map { "\($0.0):\($0.1)\n" }.joined(), signedNames, payload,
        ].joined(separator: "\n")
        let scope = "\(day)/\(location.region)/s3/aws4_request"
        let toSign = ["AWS4-HMAC-SHA256", stamp, scope, Self.hex(SHA256.hash(data: Data(canonical.utf8)))].joined(separator: "\n")
        var key = SymmetricKey(data: Data(("AWS4" + location.credentials.secretKey).utf8))
        for part in [day, location.region, "s3", "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        let signature = Self.hex(HMAC<SHA256>.authenticationCode(for: Data(toSign.utf8), using: key))
        let authorization =
            "AWS4-HMAC-SHA256 Credential=\(location.credentials.accessKey)/\(scope), SignedHeaders=\(signedNames), Signature=\(signature)"
        // The egress client writes Host itself, the same value.
        return headers.filter { $0.0 != "host" } + [("Authorization", authorization)]
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// URI-encoding as SigV4 wants it: every byte but A–Z a–z 0–9 - _ . ~ (and / in a path) as %XX.
    static func encode(_ text: String, keepSlash: Bool = false) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case 65...90, 97...122, 48...57, 45, 95, 46, 126: out.append(Character(UnicodeScalar(byte)))
            case 47 where keepSlash: out.append("/")
            default: out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(
            of: ">", with: "&gt;"
        )
        .replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// SigV4's time stamp, and HTTP's dates (Last-Modified): fixed formats, in UTC.
    static let stamp = posixFormatter("yyyyMMdd'T'HHmmss'Z'")
    static let httpDate = posixFormatter("EEE, dd MMM yyyy HH:mm:ss zzz")

    static func posixFormatter(_ format: String) -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = format
        return formatter
    }

    /// The text of the first element `name` in an XML answer.
    static func element(_ name: String, in body: Data) -> String? {
        let reader = ElementReader(names: [name])
        let parser = XMLParser(data: body)
        parser.delegate = reader
        _ = parser.parse()
        return reader.found.first?.1
    }

    /// One page of ListObjectsV2.
    struct ListPage {
        var objects: [S3Object] = []
        var truncated = false
        var next: String?

        init?(_ body: Data) {
            let reader = ElementReader(names: ["Key", "Size", "LastModified", "IsTruncated", "NextContinuationToken"])
            let parser = XMLParser(data: body)
            parser.delegate = reader
            guard parser.parse() else { return nil }
            var current: S3Object?
            for (name, value) in reader.found {
                switch name {
                case "Key":
                    if let current { objects.append(current) }
                    current = S3Object(key: value, size: 0, modified: Date(timeIntervalSince1970: 0))
                case "Size": current?.size = Int64(value) ?? 0
                case "LastModified": current?.modified = Self.isoDate(value) ?? Date(timeIntervalSince1970: 0)
                case "IsTruncated": truncated = value == "true"
                case "NextContinuationToken": next = value
                default: break
                }
            }
            if let current { objects.append(current) }
        }

        static func isoDate(_ text: String) -> Date? {
            let fractional = ISO8601DateFormatter()
            fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return fractional.date(from: text) ?? ISO8601DateFormatter().date(from: text)
        }
    }

    /// Collects the text of the elements named, in document order.
    final class ElementReader: NSObject, XMLParserDelegate {
        let names: Set<String>
        var found: [(String, String)] = []
        var current: String?
        var text = ""

        init(names: Set<String>) { self.names = names }

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
            attributes: [String: String] = [:]
        ) {
            if names.contains(elementName) { (current, text) = (elementName, "") }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { if current != nil { text += string } }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            if elementName == current {
                found.append((elementName, text))
                current = nil
            }
        }
    }
}
