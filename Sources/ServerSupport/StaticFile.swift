import CZlib
import Crypto
import HTTPTypes
import NIOCore

/// A file served as it was built (the phone app's, the board's): its bytes and, where gzip makes
/// them smaller, those bytes compressed once at start, each with an entity tag of its own
/// (RFC 9110, 8.8.3: a representation per coding). A request's `Accept-Encoding` picks the coding;
/// an `If-None-Match` that names the tag the client holds gets `304` and no body.
public struct StaticFile: Sendable {
    public let contentType: String
    public let bytes: ByteBuffer
    public let etag: String
    /// The gzip coding and its tag, when smaller.
    public let gzipped: (bytes: ByteBuffer, etag: String)?

    public init(contentType: String, bytes: [UInt8]) {
        self.contentType = contentType
        self.bytes = ByteBuffer(bytes: bytes)
        let digest = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined().prefix(16)
        etag = "\"\(digest)\""
        let compressible =
            contentType.hasPrefix("text/") || contentType.contains("json") || contentType.contains("manifest")
            || contentType.hasPrefix("image/svg")
        if compressible, let packed = Gzip.compress(bytes), packed.count < bytes.count {
            gzipped = (ByteBuffer(bytes: packed), "\"\(digest)-gz\"")
        } else {
            gzipped = nil
        }
    }

    /// The response to `request`: status 200 with the chosen coding's bytes, or 304; `headers` are
    /// added (security headers, cache control), and `Vary: Accept-Encoding` when there is a choice.
    public func response(to request: HTTPRequest, headers base: HTTPFields) -> (HTTPResponse.Status, HTTPFields, ByteBuffer?) {
        var headers = base
        let chosen = gzipped.flatMap { Self.accepts("gzip", request.headerFields[.acceptEncoding]) ? $0 : nil }
        let tag = chosen?.etag ?? etag
        headers[.eTag] = tag
        if gzipped != nil { headers[.vary] = "Accept-Encoding" }
        if let held = request.headerFields[.ifNoneMatch], Self.holds(held, tag) { return (.notModified, headers, nil) }
        headers[.contentType] = contentType
        if chosen != nil { headers[.contentEncoding] = "gzip" }
        return (.ok, headers, chosen?.bytes ?? bytes)
    }

    /// Whether an `If-None-Match` field names `etag` (by weak comparison, as the field asks) or is `*`.
    public static func holds(_ field: String, _ etag: String) -> Bool {
        field.split(separator: ",").contains { entry in
            let tag = entry.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == etag || tag == "W/" + etag
        }
    }

    /// Whether an `Accept-Encoding` field takes `coding` (named, or `*`, with a q-value above 0).
    public static func accepts(_ coding: String, _ field: String?) -> Bool {
        guard let field else { return false }
        var named: Bool?
        var any: Bool?
        for entry in field.split(separator: ",") {
            let parts = entry.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let name = parts.first else { continue }
            let q = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            if name == coding { named = q > 0 } else if name == "*" { any = q > 0 }
        }
        return named ?? any ?? false
    }
}

/// gzip (RFC 1952) through the system's zlib: at its best (9) for files compressed once at start,
/// at zlib's usual 6 for pages of changes compressed as they are read.
public enum Gzip {
    public static func compress(_ input: [UInt8], level: Int32 = 9) -> [UInt8]? {
        var stream = z_stream()
        // 15 window bits, +16 for a gzip header and trailer; memory level 9.
        guard
            deflateInit2_(&stream, level, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
                == Z_OK
        else { return nil }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))) + 32)
        var input = input
        let status = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                stream.next_in = source.baseAddress
                stream.avail_in = uInt(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = uInt(target.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        return Array(output.prefix(Int(stream.total_out)))
    }
}
