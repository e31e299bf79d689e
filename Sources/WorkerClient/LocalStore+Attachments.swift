import BlobStore
import Foundation
import GRDB
import SyncProtocol
import TeamworkModel

#if canImport(Glibc)
    import Glibc
#endif

/// A file kept on the device for an attachment: named by its SHA-256, its size and type.
public struct Attachment: Sendable, Equatable {
    public var blob: String
    public var size: Int64
    public var mediaType: String
    /// Who signed, for a signature.
    public var signer: String?
    /// The copy made by ``LocalStore/keep(file:signer:maximumBytes:)``, moved under its name by the
    /// same transaction that queues its change (so a sync pruning meanwhile never sees it unneeded).
    var staged: String?

    /// Removes the copy if no change took it (the rules refused the change).
    public func discardStaged() {
        if let staged { unlink(staged) }
    }
}

extension LocalStore {
    /// The largest file a worker may attach (the service's default limit).
    public static let maximumAttachmentBytes: Int64 = 25 * 1024 * 1024

    func blobPath(_ digest: String) -> String { blobs.appending(path: digest).path }

    /// Copies the file at `path` into the device's own folder (0600, under 0700), where it waits for
    /// the next sync even if the original is deleted or changed, and describes it. Refused: a file that
    /// cannot be read, is empty or too large, or is not a JPEG, PNG, HEIC or PDF by its first bytes
    /// (PNG or JPEG for a signature).
    public func keep(
        file path: String, signer: String? = nil,
        maximumBytes: Int64 = LocalStore.maximumAttachmentBytes
    ) throws -> Attachment {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw TeamworkError(.unreadableFile, "cannot read \(path): not a file")
        }
        let size = Int64(info.st_size)
        guard size > 0 else { throw TeamworkError.invalid("\(path) is empty") }
        guard size <= maximumBytes else { throw TeamworkError.invalid("\(path) is \(size) bytes; a file is at most \(maximumBytes)") }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw TeamworkError(.unreadableFile, "cannot read \(path)") }
        let head = (try? handle.read(upToCount: BlobMediaType.sniffedBytes)) ?? Data()
        try? handle.close()
        guard let type = BlobMediaType.sniff(head) else {
            throw TeamworkError.invalid("\(path) is not a JPEG, PNG, HEIC or PDF file (by its first bytes)")
        }
        if signer != nil, type != .png, type != .jpeg { throw TeamworkError.invalid("a signature is a PNG or JPEG image") }
        try FileManager.default.createDirectory(at: blobs, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        chmod(blobs.path, 0o700)
        // Copied first, then named by what was copied: the digest is of the device's own copy.
        let scratch = blobs.appending(path: ".incoming-\(UUID().uuidString)").path
        var kept = false
        defer { if !kept { unlink(scratch) } }
        let created = Glibc.open(scratch, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard created >= 0 else { throw TeamworkError(.cannotWrite, "cannot write into \(blobs.path)") }
        close(created)
        guard let source = FileHandle(forReadingAtPath: path), let target = FileHandle(forWritingAtPath: scratch) else {
            throw TeamworkError(.cannotWrite, "cannot copy \(path)")
        }
        defer {
            try? source.close()
            try? target.close()
        }
        var copied: Int64 = 0
        while let piece = try source.read(upToCount: 1 << 20), !piece.isEmpty {
            try target.write(contentsOf: piece)
            copied += Int64(piece.count)
        }
        try target.synchronize()
        guard copied == size else { throw TeamworkError(.unreadableFile, "\(path) changed while it was copied; try again") }
        let digest = try BlobDigest(ofFileAt: scratch)
        kept = true
        return Attachment(blob: digest.hex, size: size, mediaType: type.rawValue, signer: signer, staged: scratch)
    }

    /// Moves a staged copy under its name; in the transaction that queues its change.
    func place(_ attachment: Attachment) throws {
        guard let staged = attachment.staged else { return }
        guard rename(staged, blobPath(attachment.blob)) == 0 else {
            throw TeamworkError(.cannotWrite, "cannot keep the file in \(blobs.path): \(String(cString: strerror(errno)))")
        }
    }

    /// Files still to upload (of queued attachments), and their bytes.
    public func filesWaiting() throws -> (count: Int, bytes: Int64) {
        try queue.read { db in
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT count(*), coalesce(sum(size), 0) FROM (SELECT DISTINCT blob, size FROM outbox
                     WHERE state = 'pending' AND operation = 'attach' AND blob IS NOT NULL)
                    """)
            return (row?[0] ?? 0, row?[1] ?? 0)
        }
    }

    /// Removes the kept files no queued change needs any more (the master has them, or they were refused):
    /// an attachment accepted but not yet confirmed keeps its file, which goes again with it should the
    /// host that took it be lost. In a write transaction: a change queued meanwhile (its file placed in
    /// its own transaction) is either seen as needing its file or not placed yet.
    func pruneBlobs() throws {
        try queue.write { db in
            let needed = Set(
                try String.fetchAll(
                    db,
                    sql: """
                        SELECT DISTINCT blob FROM outbox
                         WHERE (state = 'pending' OR (state = 'accepted' AND unconfirmed)) AND blob IS NOT NULL
                        """))
            for name in (try? FileManager.default.contentsOfDirectory(atPath: blobs.path)) ?? []
            where BlobDigest(hex: name) != nil && !needed.contains(name) {
                unlink(blobPath(name))
            }
        }
    }
}
