import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A blob's name: the SHA-256 of its bytes, 64 lowercase hex digits. Content
/// addressed: the same photo sent twice is stored once, and what a name
/// promises is checked before the blob counts.
public struct BlobDigest: Sendable, Hashable, CustomStringConvertible {
    public let hex: String

    /// `nil` unless `hex` is exactly 64 lowercase hex digits.
    public init?(hex: String) {
        guard hex.utf8.count == 64, hex.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else { return nil }
        self.hex = hex
    }

    /// The digest of `data`.
    public init(of data: some DataProtocol) {
        hex = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    /// The digest of the file at `path`, read in pieces (a 25 MB photo is never held whole).
    public init(ofFileAt path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw BlobError.unreadable(path) }
        defer { try? handle.close() }
        var hasher = SHA256()
        while let piece = try handle.read(upToCount: 1 << 20), !piece.isEmpty { hasher.update(data: piece) }
        hex = hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }

    public var description: String { hex }
}

/// What a blob may be: told from its first bytes, not from what the client says.
public enum BlobMediaType: String, Sendable, CaseIterable, Codable {
    case jpeg = "image/jpeg"
    case png = "image/png"
    case heic = "image/heic"
    case pdf = "application/pdf"

    /// How many first bytes ``sniff(_:)`` needs.
    public static let sniffedBytes = 12

    /// The type `prefix` (a file's first bytes) shows, if it is one of these.
    public static func sniff(_ prefix: some Collection<UInt8>) -> BlobMediaType? {
        let bytes = Array(prefix.prefix(sniffedBytes))
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if bytes.starts(with: Array("%PDF-".utf8)) { return .pdf }
        // ISO base media: a box size, then "ftyp" and a brand of HEIF images.
        if bytes.count >= 12, Array(bytes[4..<8]) == Array("ftyp".utf8),
           ["heic", "heix", "hevc", "heim", "heis", "mif1", "msf1"].contains(String(decoding: bytes[8..<12], as: UTF8.self)) {
            return .heic
        }
        return nil
    }
}

public enum BlobError: Error, Equatable, CustomStringConvertible {
    case unreadable(String)
    case cannotWrite(String)
    /// The bytes do not hash to the name they were sent under.
    case digestMismatch(expected: String, actual: String)

    public var description: String {
        switch self {
        case .unreadable(let path): "cannot read \(path)"
        case .cannotWrite(let reason): "cannot store the blob: \(reason)"
        case .digestMismatch(let expected, let actual): "the bytes hash to \(actual), not \(expected)"
        }
    }
}

/// Where a blob stands in a store.
public enum BlobState: Sendable, Equatable {
    /// Nothing of it.
    case absent
    /// An upload under way: this many bytes held so far.
    case partial(Int64)
    /// Whole and checked: its size.
    case complete(Int64)

    /// Bytes held, whole or not.
    public var offset: Int64 {
        switch self {
        case .absent: 0
        case .partial(let bytes), .complete(let bytes): bytes
        }
    }
}

/// Where the service keeps blobs (photos, signatures, PDFs): one small
/// interface, so a store other than the service's disk (an S3-compatible one,
/// docs/operations.md) can take its place. Uploads are resumable: bytes are
/// appended at the offset the store holds, and a blob counts only once
/// ``finish(_:)`` found its bytes hash to its name.
public protocol BlobStore: Sendable {
    func state(of digest: BlobDigest) throws -> BlobState
    /// Appends `bytes` to the unfinished upload of `digest`, which must hold exactly `offset` bytes.
    func append(_ bytes: some Collection<UInt8>, to digest: BlobDigest, at offset: Int64) throws
    /// Checks the upload's bytes against its name: whole and kept when they match, removed (and
    /// ``BlobError/digestMismatch(expected:actual:)`` thrown) when not.
    func finish(_ digest: BlobDigest) throws
    /// Removes an unfinished upload (a refused one: nothing half-written stays).
    func discardPartial(_ digest: BlobDigest) throws
    /// The bytes of a complete blob, read in pieces.
    func read(_ digest: BlobDigest, _ body: (Data) throws -> Void) throws
    /// Complete blobs, and unfinished uploads with when they last grew.
    func all() throws -> (complete: [BlobDigest], partial: [(digest: BlobDigest, modified: Date)])
    func remove(_ digest: BlobDigest) throws
    /// When a complete blob was stored, or last found wanted (``touch(_:)``).
    func modified(_ digest: BlobDigest) -> Date?
    /// Marks a complete blob as wanted now: a device was told the server has it, so its record is on the way.
    func touch(_ digest: BlobDigest)
    /// The first `count` bytes of a complete blob.
    func head(_ digest: BlobDigest, count: Int) throws -> [UInt8]
}

/// Blobs on the service's own disk: `ROOT/ab/cd/<sha256>` (folders 0700, files
/// 0600), uploads under way in `ROOT/partial/<sha256>`, moved into place by a
/// rename once checked, so a reader never sees half a blob.
public struct FileBlobStore: BlobStore {
    public let root: URL

    /// Where the service keeps blobs unless told otherwise: `blobs` in its replica folder.
    public static func defaultRoot(replicas: URL) -> URL { replicas.appending(path: "blobs") }

    public init(root: URL) throws {
        self.root = root
        try Self.folder(root.path)
        try Self.folder(root.appending(path: "partial").path)
    }

    static func folder(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw BlobError.cannotWrite("\(path): \(error.localizedDescription)")
        }
        chmod(path, 0o700)
    }

    public func path(of digest: BlobDigest) -> String {
        let hex = digest.hex
        return root.appending(path: String(hex.prefix(2))).appending(path: String(hex.dropFirst(2).prefix(2)))
            .appending(path: hex).path
    }

    func partialPath(of digest: BlobDigest) -> String { root.appending(path: "partial").appending(path: digest.hex).path }

    static func size(_ path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    public func state(of digest: BlobDigest) throws -> BlobState {
        if let size = Self.size(path(of: digest)) { return .complete(size) }
        if let size = Self.size(partialPath(of: digest)) { return .partial(size) }
        return .absent
    }

    public func append(_ bytes: some Collection<UInt8>, to digest: BlobDigest, at offset: Int64) throws {
        let path = partialPath(of: digest)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw BlobError.cannotWrite("\(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var held = stat()
        guard fstat(descriptor, &held) == 0, Int64(held.st_size) == offset else {
            throw BlobError.cannotWrite("\(digest) holds \(held.st_size) bytes, not \(offset)")
        }
        let data = Array(bytes)
        var written = 0
        while written < data.count {
            let count = data.withUnsafeBytes { raw in
                pwrite(descriptor, raw.baseAddress! + written, data.count - written, off_t(offset) + off_t(written))
            }
            guard count > 0 else { throw BlobError.cannotWrite("\(path): \(String(cString: strerror(errno)))") }
            written += count
        }
    }

    public func finish(_ digest: BlobDigest) throws {
        let partial = partialPath(of: digest)
        let descriptor = open(partial, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw BlobError.unreadable(partial) }
        // Made durable before it counts: the device deletes its copy once the server says it has it.
        fsync(descriptor)
        close(descriptor)
        let actual = try BlobDigest(ofFileAt: partial)
        guard actual == digest else {
            unlink(partial)
            throw BlobError.digestMismatch(expected: digest.hex, actual: actual.hex)
        }
        let target = path(of: digest)
        try Self.folder(URL(fileURLWithPath: target).deletingLastPathComponent().path)
        guard rename(partial, target) == 0 else { throw BlobError.cannotWrite("\(target): \(String(cString: strerror(errno)))") }
        let folder = open(URL(fileURLWithPath: target).deletingLastPathComponent().path, O_RDONLY | O_CLOEXEC)
        if folder >= 0 {
            fsync(folder)
            close(folder)
        }
    }

    public func discardPartial(_ digest: BlobDigest) throws {
        unlink(partialPath(of: digest))
    }

    public func read(_ digest: BlobDigest, _ body: (Data) throws -> Void) throws {
        let path = path(of: digest)
        guard let handle = FileHandle(forReadingAtPath: path) else { throw BlobError.unreadable(path) }
        defer { try? handle.close() }
        while let piece = try handle.read(upToCount: 1 << 20), !piece.isEmpty { try body(piece) }
    }

    public func all() throws -> (complete: [BlobDigest], partial: [(digest: BlobDigest, modified: Date)]) {
        let files = FileManager.default
        var complete: [BlobDigest] = []
        for first in (try? files.contentsOfDirectory(atPath: root.path)) ?? [] where first.count == 2 {
            let level = root.appending(path: first).path
            for second in (try? files.contentsOfDirectory(atPath: level)) ?? [] where second.count == 2 {
                for name in (try? files.contentsOfDirectory(atPath: level + "/" + second)) ?? [] {
                    if let digest = BlobDigest(hex: name) { complete.append(digest) }
                }
            }
        }
        let partialFolder = root.appending(path: "partial").path
        let partial = ((try? files.contentsOfDirectory(atPath: partialFolder)) ?? []).compactMap { name -> (digest: BlobDigest, modified: Date)? in
            guard let digest = BlobDigest(hex: name),
                  let modified = try? files.attributesOfItem(atPath: partialFolder + "/" + name)[.modificationDate] as? Date else { return nil }
            return (digest: digest, modified: modified)
        }
        return (complete.sorted { $0.hex < $1.hex }, partial)
    }

    public func remove(_ digest: BlobDigest) throws {
        unlink(path(of: digest))
    }

    public func modified(_ digest: BlobDigest) -> Date? {
        try? FileManager.default.attributesOfItem(atPath: path(of: digest))[.modificationDate] as? Date
    }

    public func touch(_ digest: BlobDigest) {
        utimes(path(of: digest), nil)
    }

    public func head(_ digest: BlobDigest, count: Int) throws -> [UInt8] {
        let path = path(of: digest)
        guard let handle = FileHandle(forReadingAtPath: path) else { throw BlobError.unreadable(path) }
        defer { try? handle.close() }
        return Array(try handle.read(upToCount: count) ?? Data())
    }
}
