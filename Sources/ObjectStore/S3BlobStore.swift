import BlobStore
import Crypto
import Foundation
import TeamworkModel

/// Blobs in an S3-compatible bucket, shared by every service host (docs/operations.md):
///
///     blobs/<sha256>                          a complete blob, named only once its bytes hash to it
///     partial/<person>/<sha256>/<offset>      a person's upload under way, one object per piece kept
///     holders/<sha256>/<person>               who sent it whole, and when (the object's time)
///     pending/<person>/<sha256>/<size>        sent whole, not yet named by an attachment of theirs
///     sent/<person>/<sha256>/<size>           sent whole, for a day (the daily budget)
///     announced/<person>/<sha256>             sent as proof for a task they hold, until claimed or gone
///
/// Everything about an upload is in the bucket, so a device may send the next piece to another host:
/// the offset is the pieces' bytes from 0, read back by any host. S3's multipart upload cannot carry
/// a device's pieces as they come (every part but the last must be at least 5 MiB, and SeaweedFS,
/// MinIO and AWS all refuse smaller), so each piece is an object of its own, gathered to
/// ``pieceBytes`` first; finishing reads them in order, hashing, into the blob's multipart upload
/// (or one PUT when small), which is completed only when the hash matches: a reader never sees half
/// a blob or one that is not what its name says. Sizes ride in the marks' keys: a person's budget is
/// three listings, whatever they hold.
///
/// Its calls block until the store answers (each within ``S3Client/timeout``): like the disk's,
/// they are made from ``blockingWork(_:)``, never on the cooperative threads.
public struct S3BlobStore: BlobStore {
    public let client: S3Client
    /// What a blob's final upload holds in memory at once, and so the size of its parts.
    public var partBytes = 8 << 20

    public init(client: S3Client) { self.client = client }

    public var location: String { client.location.description }

    /// Pieces of a PATCH are gathered to this size before they are kept: one object each.
    public var pieceBytes: Int { 4 << 20 }

    /// An object store has no disk of ours to fill: room is the store's to give.
    public func freeBytes() -> Int64? { nil }

    // MARK: - Keys

    func blobKey(_ digest: BlobDigest) -> String { "blobs/\(digest.hex)" }
    func partialPrefix(_ digest: BlobDigest, by person: Uploader) -> String { "partial/\(person)/\(digest.hex)/" }
    /// The object holding the piece of `person`'s upload of `digest` that begins at `offset`.
    public func pieceKey(_ digest: BlobDigest, by person: Uploader, at offset: Int64) -> String {
        partialPrefix(digest, by: person) + String(format: "%016llx", offset)
    }
    func holderKey(_ digest: BlobDigest, by person: Uploader) -> String { "holders/\(digest.hex)/\(person)" }
    func announcedKey(_ digest: BlobDigest, by person: Uploader) -> String { "announced/\(person)/\(digest.hex)" }

    /// Waits for the store's answer on this (blocking) thread.
    func wait<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let outcome = Locked<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                let value = try await body()
                outcome.mutate { $0 = .success(value) }
            } catch {
                outcome.mutate { $0 = .failure(error) }
            }
            done.signal()
        }
        done.wait()
        do { return try outcome.value!.get() } catch let failure as S3Failure { throw BlobError.cannotWrite(failure.description) }
    }

    /// A person's pieces of an upload, in order, and how many bytes from 0 they hold without a gap.
    func pieces(_ digest: BlobDigest, by person: Uploader) async throws -> (pieces: [S3Object], held: Int64) {
        let prefix = partialPrefix(digest, by: person)
        var held: Int64 = 0
        var kept: [S3Object] = []
        // A piece left over from a race or a failed removal is passed by, never a wall the offset cannot get past.
        for piece in try await client.list(prefix).sorted(by: { $0.key < $1.key }) {
            guard let offset = Int64(piece.key.dropFirst(prefix.count), radix: 16), offset <= held else { break }
            guard offset == held, piece.size > 0 else { continue }
            kept.append(piece)
            held += piece.size
        }
        return (kept, held)
    }

    // MARK: - BlobStore

    public func state(of digest: BlobDigest, for person: Uploader) throws -> BlobState {
        try wait { [self] in
            if let blob = try await client.head(blobKey(digest)), try await client.head(holderKey(digest, by: person)) != nil {
                return .complete(blob.size)
            }
            let held = try await pieces(digest, by: person).held
            return held > 0 ? .partial(held) : .absent
        }
    }

    public func state(of digest: BlobDigest) throws -> BlobState {
        try wait { [self] in try await client.head(blobKey(digest)).map { .complete($0.size) } ?? .absent }
    }

    public func append(_ bytes: some Collection<UInt8>, to digest: BlobDigest, by person: Uploader, at offset: Int64) throws {
        let data = Data(bytes)
        try wait { [self] in
            let held = try await pieces(digest, by: person).held
            guard held == offset else { throw BlobError.cannotWrite("\(digest) holds \(held) bytes, not \(offset)") }
            try await client.put(pieceKey(digest, by: person, at: offset), data)
        }
    }

    public func finish(_ digest: BlobDigest, by person: Uploader) throws {
        try wait { [self] in
            let (pieces, _) = try await pieces(digest, by: person)
            let stored = try await client.head(blobKey(digest)) != nil
            var hasher = SHA256()
            var buffer = Data()
            var upload: String?
            var parts: [String] = []
            do {
                for piece in pieces {
                    guard let bytes = try await client.get(piece.key, limit: Int(piece.size) + 1), Int64(bytes.count) == piece.size else {
                        throw BlobError.unreadable(piece.key)
                    }
                    hasher.update(data: bytes)
                    guard !stored else { continue }
                    buffer.append(bytes)
                    while buffer.count >= partBytes * 2 || (buffer.count >= partBytes && upload != nil) {
                        let id: String
                        if let upload { id = upload } else { id = try await client.createMultipart(blobKey(digest)) }
                        upload = id
                        parts.append(
                            try await client.uploadPart(blobKey(digest), upload: id, number: parts.count + 1, buffer.prefix(partBytes)))
                        buffer.removeFirst(partBytes)
                    }
                }
                let actual = S3Client.hex(hasher.finalize())
                guard actual == digest.hex else {
                    try await removePieces(digest, by: person)
                    throw BlobError.digestMismatch(expected: digest.hex, actual: actual)
                }
                if !stored {
                    // Named only now, the hash checked.
                    if let upload {
                        if !buffer.isEmpty {
                            parts.append(try await client.uploadPart(blobKey(digest), upload: upload, number: parts.count + 1, buffer))
                        }
                        try await client.completeMultipart(blobKey(digest), upload: upload, parts: parts)
                    } else {
                        try await client.put(blobKey(digest), buffer)
                    }
                }
            } catch {
                if let upload { try? await client.abortMultipart(blobKey(digest), upload: upload) }
                throw error
            }
            let size = pieces.reduce(0) { $0 + $1.size }
            // Pending first: a holder whose mark is not yet written must not be free of the allowance.
            try await client.put("pending/\(person)/\(digest.hex)/\(size)", Data())
            try await client.put("sent/\(person)/\(digest.hex)/\(size)", Data())
            try await client.put(holderKey(digest, by: person), Data())
            try await removePieces(digest, by: person)
        }
    }

    /// Removes every piece of the upload, the first (which dates it for the sweep) last: one left by a
    /// failure partway is still found and swept.
    func removePieces(_ digest: BlobDigest, by person: Uploader) async throws {
        for piece in try await client.list(partialPrefix(digest, by: person)).sorted(by: { $0.key > $1.key }) {
            try await client.delete(piece.key)
        }
    }

    public func discardPartial(_ digest: BlobDigest, by person: Uploader) throws {
        try wait { [self] in
            try await removePieces(digest, by: person)
            if try await client.head(holderKey(digest, by: person)) == nil { try await client.delete(announcedKey(digest, by: person)) }
        }
    }

    public func claim(_ digest: BlobDigest, by person: Uploader) throws {
        try wait { [self] in
            for mark in try await client.list("pending/\(person)/\(digest.hex)/") { try await client.delete(mark.key) }
            try await client.delete(announcedKey(digest, by: person))
        }
    }

    public func pending(of person: Uploader) throws -> (files: Int, bytes: Int64, sentLastDay: Int64) {
        try wait { [self] in
            let partial = try await client.list("partial/\(person)/")
            let uploads = Set(partial.compactMap { object in object.key.split(separator: "/").dropFirst(2).first })
            var (files, bytes) = (uploads.count, partial.reduce(Int64(0)) { $0 + $1.size })
            for mark in try await client.list("pending/\(person)/") {
                files += 1
                bytes += Self.size(in: mark.key)
            }
            let dayAgo = client.clock().addingTimeInterval(-86_400)
            let sent = try await client.list("sent/\(person)/").filter { $0.modified > dayAgo }.reduce(Int64(0)) {
                $0 + Self.size(in: $1.key)
            }
            return (files, bytes, sent)
        }
    }

    /// The size a mark's key carries (its last part).
    static func size(in key: String) -> Int64 { key.split(separator: "/").last.flatMap { Int64($0) } ?? 0 }

    /// When someone last sent it whole; now when the store cannot tell (the sweep then keeps it a while longer).
    public func lastSent(_ digest: BlobDigest) -> Date? {
        do { return try wait { [self] in try await client.list("holders/\(digest.hex)/").map(\.modified).max() } } catch {
            return client.clock()
        }
    }

    public func read(_ digest: BlobDigest, _ body: (Data) throws -> Void) throws {
        guard let blob = try wait({ [self] in try await client.head(blobKey(digest)) }) else { throw BlobError.unreadable(blobKey(digest)) }
        var offset: Int64 = 0
        let step = Int64(1 << 20)
        while offset < blob.size {
            let range = offset...min(offset + step, blob.size) - 1
            guard let piece = try wait({ [self] in try await client.get(blobKey(digest), range: range, limit: Int(step)) }), !piece.isEmpty
            else { throw BlobError.unreadable(blobKey(digest)) }
            try body(piece)
            offset += Int64(piece.count)
        }
    }

    public func inventory() throws -> BlobInventory {
        try wait { [self] in
            let holders = Dictionary(
                grouping: try await client.list("holders/"), by: { $0.key.split(separator: "/").dropFirst().first ?? "" })
            let complete = try await client.list("blobs/").compactMap { object -> (digest: BlobDigest, sent: Date)? in
                guard let digest = BlobDigest(hex: String(object.key.dropFirst("blobs/".count))) else { return nil }
                return (digest, holders[Substring(digest.hex)]?.map(\.modified).max() ?? object.modified)
            }
            // An upload began when its first piece was kept (its earliest, should the first be gone).
            var began: [UploadKey: Date] = [:]
            for object in try await client.list("partial/") {
                let parts = object.key.split(separator: "/")
                guard parts.count == 4, let person = Uploader(parts[1]), let digest = BlobDigest(hex: String(parts[2])) else { continue }
                let key = UploadKey(digest: digest, person: person)
                began[key] = min(began[key] ?? object.modified, object.modified)
            }
            let partial = began.map { BlobInventory.Upload(digest: $0.key.digest, person: $0.key.person, time: $0.value, pending: false) }
                .sorted { ($0.time, $0.digest.hex) < ($1.time, $1.digest.hex) }
            func marks(_ folder: String, pending: Bool) async throws -> [BlobInventory.Upload] {
                try await client.list(folder + "/").compactMap { object in
                    let parts = object.key.split(separator: "/")
                    guard parts.count == 4, let person = Uploader(parts[1]), let digest = BlobDigest(hex: String(parts[2])) else {
                        return nil
                    }
                    return .init(digest: digest, person: person, time: object.modified, pending: pending)
                }
            }
            return BlobInventory(
                complete: complete.sorted { $0.digest.hex < $1.digest.hex }, partial: partial,
                pending: try await marks("pending", pending: true), sent: try await marks("sent", pending: false))
        }
    }

    public func remove(_ digest: BlobDigest) throws {
        try wait { [self] in
            try await client.delete(blobKey(digest))
            for holder in try await client.list("holders/\(digest.hex)/") {
                if let person = holder.key.split(separator: "/").last.flatMap({ Uploader($0) }) {
                    try await client.delete(announcedKey(digest, by: person))
                }
                try await client.delete(holder.key)
            }
        }
    }

    public func discard(_ entry: BlobInventory.Upload) throws {
        guard let person = entry.person else { return }
        if entry.pending {
            try claim(entry.digest, by: person)
        } else {
            try discardPartial(entry.digest, by: person)
        }
    }

    public func discardSent(_ entry: BlobInventory.Upload) throws {
        guard let person = entry.person else { return }
        try wait { [self] in
            for mark in try await client.list("sent/\(person)/\(entry.digest.hex)/") { try await client.delete(mark.key) }
        }
    }

    public func head(_ digest: BlobDigest, count: Int) throws -> [UInt8] {
        guard count > 0 else { return [] }
        guard let bytes = try wait({ [self] in try await client.get(blobKey(digest), range: 0...Int64(count - 1), limit: count) }) else {
            throw BlobError.unreadable(blobKey(digest))
        }
        return Array(bytes)
    }

    /// Never needed: an upload is short of room only on a disk of the service's own (``freeBytes()``
    /// is `nil` here), and the week's sweep removes unclaimed files from the bucket as from a disk.
    public func evictUnclaimed(atLeast bytes: Int64, before: Date, sparing: Set<UploadKey>, proof: Bool) throws -> Int64 { 0 }

    public func announce(_ digest: BlobDigest, by person: Uploader) throws {
        try wait { [self] in try await client.put(announcedKey(digest, by: person), Data()) }
    }
}
