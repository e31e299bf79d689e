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
            ["heic", "heix", "hevc", "heim", "heis", "mif1", "msf1"].contains(String(decoding: bytes[8..<12], as: UTF8.self))
        {
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

/// An upload's owner: the person whose device sent it (people's ids on the master).
public typealias Uploader = Int64

/// One person's upload of one blob.
public struct UploadKey: Sendable, Hashable {
    public var digest: BlobDigest
    public var person: Uploader

    public init(digest: BlobDigest, person: Uploader) { (self.digest, self.person) = (digest, person) }
}
