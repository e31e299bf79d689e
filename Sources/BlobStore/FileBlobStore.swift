import Crypto
import Foundation

#if canImport(Glibc)
    import Glibc
#endif
/// Blobs on the service's own disk (folders 0700, files 0600):
///
///     ROOT/ab/cd/<sha256>                 a complete blob
///     ROOT/partial/<person>/<sha256>      a person's upload under way, moved into place by a rename once checked
///     ROOT/holders/<sha256>/<person>      who sent it whole, and when (the file's time)
///     ROOT/pending/<person>/<sha256>      sent whole, not yet named by an attachment of theirs
///     ROOT/sent/<person>/<sha256>         sent whole, for a day (the daily budget)
///     ROOT/announced/<person>/<sha256>    sent as proof for a task they hold, until claimed or gone
///
/// A reader never sees half a blob.
public struct FileBlobStore: BlobStore {
    public let root: URL

    /// Where the service keeps blobs unless told otherwise: `blobs` in its replica folder.
    public static func defaultRoot(replicas: URL) -> URL { replicas.appending(path: "blobs") }

    public var location: String { root.path }

    public var pieceBytes: Int { 0 }

    /// Free bytes on the file system holding the folder (for an unprivileged writer).
    public func freeBytes() -> Int64? {
        var info = statvfs()
        guard statvfs(root.path, &info) == 0 else { return 0 }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    public init(root: URL) throws {
        self.root = root
        for folder in ["", "partial", "holders", "pending", "sent", "announced"].map({ root.appending(path: $0) }) {
            try Self.folder(folder.path)
        }
    }

    static func folder(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true,
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

    func partialPath(of digest: BlobDigest, by person: Uploader) -> String {
        root.appending(path: "partial/\(person)/\(digest.hex)").path
    }

    func holderPath(of digest: BlobDigest, by person: Uploader) -> String { root.appending(path: "holders/\(digest.hex)/\(person)").path }

    func pendingPath(of digest: BlobDigest, by person: Uploader) -> String { root.appending(path: "pending/\(person)/\(digest.hex)").path }

    func sentPath(of digest: BlobDigest, by person: Uploader) -> String { root.appending(path: "sent/\(person)/\(digest.hex)").path }

    func announcedPath(of digest: BlobDigest, by person: Uploader) -> String {
        root.appending(path: "announced/\(person)/\(digest.hex)").path
    }

    public func announce(_ digest: BlobDigest, by person: Uploader) throws {
        try Self.mark(announcedPath(of: digest, by: person))
    }

    func isAnnounced(_ digest: BlobDigest, by person: Uploader) -> Bool { Self.size(announcedPath(of: digest, by: person)) != nil }

    static func size(_ path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    static func time(_ path: String) -> Date? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(info.st_mtim.tv_sec) + TimeInterval(info.st_mtim.tv_nsec) / 1e9)
    }

    public func state(of digest: BlobDigest, for person: Uploader) throws -> BlobState {
        if let size = Self.size(path(of: digest)), Self.size(holderPath(of: digest, by: person)) != nil { return .complete(size) }
        if let size = Self.size(partialPath(of: digest, by: person)) { return .partial(size) }
        return .absent
    }

    public func state(of digest: BlobDigest) throws -> BlobState {
        Self.size(path(of: digest)).map(BlobState.complete) ?? .absent
    }

    public func append(_ bytes: some Collection<UInt8>, to digest: BlobDigest, by person: Uploader, at offset: Int64) throws {
        let path = partialPath(of: digest, by: person)
        if offset == 0 { try Self.folder(URL(fileURLWithPath: path).deletingLastPathComponent().path) }
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
        // An unfinished upload's day counts from its start: adding to it keeps the time it began.
        if offset > 0 {
            let times = [held.st_atim, held.st_mtim]
            futimens(descriptor, times)
        }
    }

    public func finish(_ digest: BlobDigest, by person: Uploader) throws {
        let partial = partialPath(of: digest, by: person)
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
        if Self.size(target) != nil {
            // Stored already (someone else sent it): this person proved they have the bytes too.
            unlink(partial)
        } else {
            try Self.folder(URL(fileURLWithPath: target).deletingLastPathComponent().path)
            guard rename(partial, target) == 0 else { throw BlobError.cannotWrite("\(target): \(String(cString: strerror(errno)))") }
            Self.syncFolder(of: target)
        }
        // Pending first: a holder whose mark is not yet written must not be free of the allowance.
        try Self.mark(pendingPath(of: digest, by: person))
        try Self.mark(sentPath(of: digest, by: person))
        try Self.mark(holderPath(of: digest, by: person))
    }

    /// Creates (or renews the time of) an empty file, its folder made if needed, durably.
    static func mark(_ path: String) throws {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try Self.folder(folder)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw BlobError.cannotWrite("\(path): \(String(cString: strerror(errno)))") }
        fsync(descriptor)
        close(descriptor)
        syncFolder(of: path)
    }

    static func syncFolder(of path: String) {
        let folder = open(URL(fileURLWithPath: path).deletingLastPathComponent().path, O_RDONLY | O_CLOEXEC)
        if folder >= 0 {
            fsync(folder)
            close(folder)
        }
    }

    public func discardPartial(_ digest: BlobDigest, by person: Uploader) throws {
        unlink(partialPath(of: digest, by: person))
        if Self.size(holderPath(of: digest, by: person)) == nil { unlink(announcedPath(of: digest, by: person)) }
    }

    public func claim(_ digest: BlobDigest, by person: Uploader) throws {
        unlink(pendingPath(of: digest, by: person))
        unlink(announcedPath(of: digest, by: person))
    }

    public func pending(of person: Uploader) throws -> (files: Int, bytes: Int64, sentLastDay: Int64) {
        var (files, bytes, sent) = (0, Int64(0), Int64(0))
        let fileManager = FileManager.default
        for name in (try? fileManager.contentsOfDirectory(atPath: root.appending(path: "partial/\(person)").path)) ?? [] {
            guard let digest = BlobDigest(hex: name), let size = Self.size(partialPath(of: digest, by: person)) else { continue }
            (files, bytes) = (files + 1, bytes + size)
        }
        for name in (try? fileManager.contentsOfDirectory(atPath: root.appending(path: "pending/\(person)").path)) ?? [] {
            guard let digest = BlobDigest(hex: name), let size = Self.size(path(of: digest)) else { continue }
            (files, bytes) = (files + 1, bytes + size)
        }
        let dayAgo = Date().addingTimeInterval(-86_400)
        for name in (try? fileManager.contentsOfDirectory(atPath: root.appending(path: "sent/\(person)").path)) ?? [] {
            guard let digest = BlobDigest(hex: name), let at = Self.time(sentPath(of: digest, by: person)), at > dayAgo,
                let size = Self.size(path(of: digest))
            else { continue }
            sent += size
        }
        return (files, bytes, sent)
    }

    public func lastSent(_ digest: BlobDigest) -> Date? {
        let holders = root.appending(path: "holders/\(digest.hex)").path
        return ((try? FileManager.default.contentsOfDirectory(atPath: holders)) ?? []).compactMap { Self.time(holders + "/" + $0) }.max()
    }

    public func read(_ digest: BlobDigest, _ body: (Data) throws -> Void) throws {
        let path = path(of: digest)
        guard let handle = FileHandle(forReadingAtPath: path) else { throw BlobError.unreadable(path) }
        defer { try? handle.close() }
        while let piece = try handle.read(upToCount: 1 << 20), !piece.isEmpty { try body(piece) }
    }

    public func inventory() throws -> BlobInventory {
        let files = FileManager.default
        func names(_ path: String) -> [String] { (try? files.contentsOfDirectory(atPath: path)) ?? [] }
        var complete: [(digest: BlobDigest, sent: Date)] = []
        for first in names(root.path) where first.count == 2 {
            let level = root.appending(path: first).path
            for second in names(level) where second.count == 2 {
                for name in names(level + "/" + second) {
                    guard let digest = BlobDigest(hex: name), let stored = Self.time(path(of: digest)) else { continue }
                    let holders = root.appending(path: "holders/\(name)").path
                    let sent = names(holders).compactMap { Self.time(holders + "/" + $0) }.max() ?? stored
                    complete.append((digest, sent))
                }
            }
        }
        var partial: [BlobInventory.Upload] = []
        let partialFolder = root.appending(path: "partial").path
        for entry in names(partialFolder) {
            if let digest = BlobDigest(hex: entry), let time = Self.time(partialFolder + "/" + entry) {
                partial.append(.init(digest: digest, person: nil, time: time, pending: false))
            } else if let person = Uploader(entry) {
                for name in names(partialFolder + "/" + entry) {
                    guard let digest = BlobDigest(hex: name), let time = Self.time(partialPath(of: digest, by: person)) else { continue }
                    partial.append(.init(digest: digest, person: person, time: time, pending: false))
                }
            }
        }
        func marks(_ folder: String, pending: Bool) -> [BlobInventory.Upload] {
            let base = root.appending(path: folder).path
            return names(base).flatMap { entry -> [BlobInventory.Upload] in
                guard let person = Uploader(entry) else { return [] }
                return names(base + "/" + entry).compactMap { name in
                    guard let digest = BlobDigest(hex: name), let time = Self.time(base + "/" + entry + "/" + name) else { return nil }
                    return .init(digest: digest, person: person, time: time, pending: pending)
                }
            }
        }
        return BlobInventory(
            complete: complete.sorted { $0.digest.hex < $1.digest.hex }, partial: partial,
            pending: marks("pending", pending: true), sent: marks("sent", pending: false))
    }

    public func remove(_ digest: BlobDigest) throws {
        unlink(path(of: digest))
        let holders = root.appending(path: "holders/\(digest.hex)").path
        for person in (try? FileManager.default.contentsOfDirectory(atPath: holders)) ?? [] {
            if let person = Uploader(person) { unlink(announcedPath(of: digest, by: person)) }
        }
        try? FileManager.default.removeItem(atPath: holders)
    }

    public func discard(_ entry: BlobInventory.Upload) throws {
        switch (entry.person, entry.pending) {
        case (nil, _): unlink(root.appending(path: "partial/\(entry.digest.hex)").path)
        case (let person?, false):
            unlink(partialPath(of: entry.digest, by: person))
            if Self.size(holderPath(of: entry.digest, by: person)) == nil { unlink(announcedPath(of: entry.digest, by: person)) }
        case (let person?, true):
            unlink(pendingPath(of: entry.digest, by: person))
            unlink(announcedPath(of: entry.digest, by: person))
        }
    }

    public func discardSent(_ entry: BlobInventory.Upload) throws {
        if let person = entry.person { unlink(sentPath(of: entry.digest, by: person)) }
    }

    public func evictUnclaimed(atLeast bytes: Int64, before: Date, sparing: Set<UploadKey>, proof: Bool) throws -> Int64 {
        let inventory = try inventory()
        var candidates: [JunkEviction.Candidate] = []
        for upload in inventory.partial {
            guard let person = upload.person, !sparing.contains(UploadKey(digest: upload.digest, person: person)),
                upload.time < before || (proof && !isAnnounced(upload.digest, by: person)),
                let size = Self.size(partialPath(of: upload.digest, by: person))
            else { continue }
            candidates.append(
                .init(person: person, time: upload.time, bytes: size, item: .partial(UploadKey(digest: upload.digest, person: person))))
        }
        // A whole file is junk only while every holder still has it pending (no attachment of anyone's names it).
        let pendingBy = Dictionary(grouping: inventory.pending, by: \.digest)
        for blob in inventory.complete {
            guard let marks = pendingBy[blob.digest], let size = Self.size(path(of: blob.digest)), unclaimed(blob.digest),
                let first = marks.min(by: { $0.time < $1.time }), let person = first.person,
                blob.sent < before || (proof && !marks.contains { $0.person.map { isAnnounced(blob.digest, by: $0) } ?? false })
            else { continue }
            candidates.append(.init(person: person, time: first.time, bytes: size, item: .complete(blob.digest)))
        }
        guard candidates.reduce(0, { $0 + $1.bytes }) >= bytes else { return 0 }
        var freed: Int64 = 0
        for chosen in JunkEviction.choose(candidates, atLeast: bytes) {
            switch chosen.item {
            case .partial(let upload):
                unlink(partialPath(of: upload.digest, by: upload.person))
            case .complete(let digest):
                // Claimed, or sent again (unless nobody announced it and proof needs the room), since the inventory was taken: it stays.
                guard unclaimed(digest), let sent = lastSent(digest),
                    sent < before
                        || (proof && !(pendingBy[digest] ?? []).contains { $0.person.map { isAnnounced(digest, by: $0) } ?? false })
                else { continue }
                for mark in pendingBy[digest] ?? [] { try discard(mark) }
                try remove(digest)
            }
            freed += chosen.bytes
        }
        return freed
    }

    /// Every holder of the blob still has it pending: no attachment of anyone's has claimed it.
    func unclaimed(_ digest: BlobDigest) -> Bool {
        let holders = (try? FileManager.default.contentsOfDirectory(atPath: root.appending(path: "holders/\(digest.hex)").path)) ?? []
        return holders.allSatisfy { Self.size(root.appending(path: "pending/\($0)/\(digest.hex)").path) != nil }
    }

    public func head(_ digest: BlobDigest, count: Int) throws -> [UInt8] {
        let path = path(of: digest)
        guard let handle = FileHandle(forReadingAtPath: path) else { throw BlobError.unreadable(path) }
        defer { try? handle.close() }
        return Array(try handle.read(upToCount: count) ?? Data())
    }
}
