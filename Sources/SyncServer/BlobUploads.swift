import BlobStore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServerSupport
import TeamDatabase
import TeamworkModel

#if canImport(Glibc)
    import Glibc
#endif

/// Resumable, content-addressed uploads of proof-of-work files (photos,
/// signatures, PDFs) by signed-in workers (docs/protocol.md, "Blobs"):
///
///     HEAD  /v1/blobs/{sha256}   Upload-Offset: bytes the server holds of the caller's upload; Upload-Complete: ?1 when they hold it whole
///     PATCH /v1/blobs/{sha256}   Upload-Offset: where this piece starts (the server's), Upload-Length: the
///                                whole size; body: the bytes from there (application/offset+octet-stream)
///
/// A cut connection keeps what arrived: the device asks again and sends the
/// rest. Each person's upload is their own: a blob counts for them once the
/// bytes *they* sent hash to its name (else 422, nothing kept), and only then
/// may an attachment of theirs name it; one they hold whole is never sent
/// again, and whether someone else sent it is never told. Its type is told
/// from its first bytes (JPEG, PNG, HEIC, PDF; else 415), its size is at most
/// ``maximumBytes`` (400). Budgets, checked before a byte is kept: a person has
/// at most ``maximumPerPerson`` uploads going at once (429), holds at most
/// ``allowance`` in uploads unfinished or not yet named by an attachment of
/// theirs, and sends at most ``dailyBytes`` a day (507, for them only), and two
/// uploads of the same blob by one person never interleave (503).
///
/// A piece may say what it is proof of, `Upload-For: {task id}`: when the sender holds that task
/// (its assignee, not completed or cancelled, in a replica of theirs) the file is announced proof,
/// and on a full disk files nobody announced make room for it whatever their age (docs/security.md).
struct BlobUploads: Sendable {
    let store: any BlobStore
    /// The replicas a piece's `Upload-For` is checked against.
    let replicas: ReplicaConnections?
    let maximumBytes: Int64
    /// Uploads one person may have going at once.
    let uploads: Budget<Int64>
    /// Bytes and files one person may hold unfinished or pending (not yet named by an attachment).
    let allowance: (files: Int, bytes: Int64)
    /// Bytes one person may send whole in a day, attached or not.
    let dailyBytes: Int64
    /// Bytes kept free on the blob folder's disk (the replicas may share it).
    let reserveBytes: Int64
    private let active = Locked(Set<ActiveUpload>())
    /// Bytes the uploads under way may still add, by person and in all: reserved before a byte is
    /// kept, so two uploads at once cannot both pass a check that only one fits.
    private let reserved = Locked<(byPerson: [Int64: Int64], all: Int64)>(([:], 0))

    private struct ActiveUpload: Hashable {
        var digest: BlobDigest
        var person: Int64
    }

    init(
        store: any BlobStore, replicas: ReplicaConnections? = nil, maximumBytes: Int64, maximumPerPerson: Int = 2,
        allowance: (files: Int, bytes: Int64) = (200, 256 * 1024 * 1024), dailyBytes: Int64 = 1024 * 1024 * 1024,
        reserveBytes: Int64 = 256 * 1024 * 1024
    ) {
        self.reserveBytes = reserveBytes
        self.store = store
        self.replicas = replicas
        self.maximumBytes = maximumBytes
        uploads = Budget(perPrincipal: maximumPerPerson)
        self.allowance = allowance
        self.dailyBytes = dailyBytes
    }

    static let offsetHeader = HTTPField.Name("Upload-Offset")!
    static let lengthHeader = HTTPField.Name("Upload-Length")!
    static let completeHeader = HTTPField.Name("Upload-Complete")!
    static let forHeader = HTTPField.Name("Upload-For")!

    /// Whether the piece is announced proof: `Upload-For` names a task `person` holds (its assignee,
    /// neither completed nor cancelled) in one of the replicas they read. 400 for a header that is
    /// not a task id; a task they do not hold makes it an upload like any other.
    func isProof(_ request: Request, person: Int64, teams: [Team]) throws -> Bool {
        guard let text = request.headers[Self.forHeader] else { return false }
        guard let task = Int64(text), task > 0 else { throw HTTPError(.badRequest, message: "Upload-For names a task by its id") }
        guard let replicas else { return false }
        for replica in teams.map({ ReplicaID.team($0.id) }) + [ReplicaID.person(person)] {
            let held = try? replicas.withConnection(to: replica) { queue in
                try queue.read { db in
                    try Bool.fetchOne(
                        db,
                        sql: """
                            SELECT EXISTS (SELECT 1 FROM tasks WHERE id = ? AND assignee_id = ? AND status NOT IN ('completed', 'cancelled'))
                            """, arguments: [task, person]) ?? false
                }
            }
            if held == true { return true }
        }
        return false
    }

    static func digest(_ context: SyncRequestContext) throws -> BlobDigest {
        guard let text = context.parameters.get("digest"), let digest = BlobDigest(hex: text) else {
            throw HTTPError(.badRequest, message: "a blob is named by the SHA-256 of its bytes: 64 lowercase hex digits")
        }
        return digest
    }

    static func answer(_ state: BlobState, status: HTTPResponse.Status = .ok) -> Response {
        var headers = HTTPFields()
        headers[offsetHeader] = String(state.offset)
        if case .complete = state { headers[completeHeader] = "?1" } else { headers[completeHeader] = "?0" }
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers)
    }

    @Sendable func head(_ request: Request, context: SyncRequestContext) async throws -> Response {
        let person = try context.requirePerson()
        let digest = try Self.digest(context)
        let store = store
        return Self.answer(try await blockingWork { try store.state(of: digest, for: person.id) })
    }

    @Sendable func patch(_ request: Request, context: SyncRequestContext) async throws -> Response {
        let person = try context.requirePerson().id
        let digest = try Self.digest(context)
        guard let offsetText = request.headers[Self.offsetHeader], let offset = Int64(offsetText), offset >= 0,
            let lengthText = request.headers[Self.lengthHeader], let length = Int64(lengthText), length > 0
        else {
            throw HTTPError(.badRequest, message: "a piece of a blob needs Upload-Offset (0 or more) and Upload-Length (its whole size)")
        }
        guard length <= maximumBytes else {
            // A header out of its range, as the document states it for the default limit: 400, as for any such header.
            throw HTTPError(.badRequest, message: "a file is at most \(maximumBytes) bytes")
        }
        let place = try begin(digest, person: person)
        defer { end(digest, person: person, place) }
        // Whether it is proof, read from the sender's replicas within their uploads' budget.
        let (teams, uploads) = (context.teams, self)
        let proof = try await blockingWork { try uploads.isProof(request, person: person, teams: teams) }
        var announced = false
        let store = store
        let state = try await blockingWork { try store.state(of: digest, for: person) }
        if case .complete = state { return Self.answer(state) }
        if state.offset > length {
            try await blockingWork { try store.discardPartial(digest, by: person) }
            return Self.answer(.absent, status: .conflict)
        }
        guard state.offset == offset else {
            // Not where the server is (past the file's end included): the device sends from the server's offset.
            return Self.answer(state, status: .conflict)
        }
        // The budgets, before any byte is kept: this upload's rest is reserved first, then what the
        // others under way have reserved is read, then the disk (an upload that ends meanwhile has
        // written its marks before it gave its reservation back: counted once at least).
        let rest = length - offset
        let (mine, everyone) = reserved.mutate { reserved -> (Int64, Int64) in
            reserved.byPerson[person, default: 0] += rest
            reserved.all += rest
            return (reserved.byPerson[person, default: 0], reserved.all)
        }
        defer {
            reserved.mutate { reserved in
                reserved.byPerson[person] = reserved.byPerson[person].map { $0 - rest > 0 ? $0 - rest : nil } ?? nil
                reserved.all -= rest
            }
        }
        let held = try await blockingWork { try store.pending(of: person) }
        guard held.bytes + mine <= allowance.bytes, held.files + (offset == 0 ? 1 : 0) <= allowance.files else {
            context.logger.notice("refused: upload allowance used", metadata: ["files": "\(held.files)", "bytes": "\(held.bytes)"])
            throw HTTPError(
                Self.insufficientStorage,
                message: "your uploads not yet sent with their attachments hold \(held.files) files, "
                    + "\(held.bytes / 1_048_576) MB (at most \(allowance.files), \(allowance.bytes / 1_048_576) MB): sync the attachments first"
            )
        }
        guard held.sentLastDay + mine <= dailyBytes else {
            context.logger.notice("refused: daily upload budget used", metadata: ["bytes": "\(held.sentLastDay)"])
            throw HTTPError(
                Self.insufficientStorage,
                message: "you sent \(held.sentLastDay / 1_048_576) MB of files in the last day "
                    + "(at most \(dailyBytes / 1_048_576) MB): the rest waits on your device")
        }
        // Room for every upload under way and some to spare: a full disk would break the replicas beside the blobs.
        // Short of it, files no attachment has claimed make room, the biggest holder's oldest first (JunkEviction).
        if let free = store.freeBytes(), everyone + reserveBytes - free >= 0 {
            let short = everyone + reserveBytes - free
            let underWay = Set(active.value.map { UploadKey(digest: $0.digest, person: $0.person) })
            // Not a file sent in the last ten minutes: its attachment may be on its way (a push claims it
            // after it is stored); but proof, announced for a task its sender holds, goes before files nobody announced.
            let before = Date().addingTimeInterval(-Self.evictionGrace)
            let freed = try await blockingWork {
                try store.evictUnclaimed(atLeast: short + 1, before: before, sparing: underWay, proof: proof)
            }
            if freed > 0 { context.logger.notice("made room for an upload: removed unclaimed files", metadata: ["bytes": "\(freed)"]) }
            guard (store.freeBytes() ?? .max) > everyone + reserveBytes else {
                throw HTTPError(Self.insufficientStorage, message: "the server is short of disk space; try again later")
            }
        }
        var kept = offset
        var head: [UInt8] = []
        // Bytes read and not yet kept: gathered to the store's piece size (an object store keeps each piece as an object).
        var gathered: [UInt8] = []
        let pieceBytes = store.pieceBytes
        func keep() async throws {
            guard !gathered.isEmpty else { return }
            let (chunk, at) = (gathered, kept)
            try await blockingWork { try store.append(chunk, to: digest, by: person, at: at) }
            kept += Int64(chunk.count)
            gathered = []
            // Announced once its first bytes are kept: a piece refused before leaves no mark.
            if proof, !announced {
                try await blockingWork { try store.announce(digest, by: person) }
                announced = true
            }
        }
        do {
            do {
                for try await piece in request.body {
                    var bytes = Array(piece.readableBytesView)
                    if kept + Int64(gathered.count + head.count + bytes.count) > length {
                        // The body and its Upload-Length disagree: nothing of it is kept, the device starts again.
                        try await blockingWork { try store.discardPartial(digest, by: person) }
                        return Self.answer(.absent, status: .conflict)
                    }
                    // The type from the first bytes, before any of them is kept.
                    if kept == 0 && gathered.isEmpty && head.count < BlobMediaType.sniffedBytes {
                        head += bytes
                        guard head.count >= BlobMediaType.sniffedBytes || Int64(head.count) == length else { continue }
                        bytes = head
                        head = []
                        guard BlobMediaType.sniff(bytes) != nil else {
                            throw HTTPError(
                                .unsupportedMediaType, message: "only JPEG, PNG, HEIC and PDF files are taken, told from their first bytes")
                        }
                    }
                    gathered += bytes
                    if gathered.count >= pieceBytes { try await keep() }
                }
            } catch let error as HTTPError {
                throw error
            } catch let error as BlobError {
                throw error
            } catch {
                // The connection broke: what arrived is kept, for the device to resume from.
                try? await keep()
                throw error
            }
            try await keep()
            if kept == offset, head.isEmpty, offset < length {
                throw HTTPError(.badRequest, message: "a piece of a file has at least one byte")
            }
            if kept == 0, !head.isEmpty {
                // The body ended before the bytes that tell the type: a whole file that short is judged by
                // them; a cut one keeps nothing and is sent again from 0.
                guard Int64(head.count) == length else { return Self.answer(.absent) }
                guard BlobMediaType.sniff(head) != nil else {
                    throw HTTPError(
                        .unsupportedMediaType, message: "only JPEG, PNG, HEIC and PDF files are taken, told from their first bytes")
                }
                gathered = head
                try await keep()
            }
        } catch let error as HTTPError {
            throw error
        } catch let error as BlobError {
            context.logger.error("cannot store a blob", metadata: ["blob": "\(digest)", "error": "\(error)"])
            throw error
        }
        // A connection cut halfway ends the body early: what arrived stays, for the device to resume.
        guard kept == length else { return Self.answer(.partial(kept)) }
        do {
            try await blockingWork { try store.finish(digest, by: person) }
        } catch let error as BlobError {
            if case .digestMismatch(_, let actual) = error {
                context.logger.notice(
                    "a blob did not hash to its name; nothing kept", metadata: ["blob": "\(digest)", "actual": "\(actual)"])
            } else {
                // Every byte is kept: the next PATCH at Upload-Length finishes it.
                context.logger.error("cannot store a blob", metadata: ["blob": "\(digest)", "error": "\(error)"])
            }
            throw error
        }
        return Self.answer(.complete(length), status: .created)
    }

    /// How long a file is safe from eviction after it was sent (or its upload began).
    static let evictionGrace: TimeInterval = 600

    static let insufficientStorage = HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage")

    /// One upload of a blob by one person at a time, and at most ``uploads``' share of one person's.
    private func begin(_ digest: BlobDigest, person: Int64) throws -> Budget<Int64>.Reservation {
        let upload = ActiveUpload(digest: digest, person: person)
        guard active.mutate({ $0.insert(upload).inserted }) else {
            throw HTTPError(.serviceUnavailable, message: "this file is being uploaded by another request; try again shortly")
        }
        guard case .success(let place) = uploads.reserve(for: person) else {
            active.mutate { _ = $0.remove(upload) }
            throw HTTPError(.tooManyRequests, message: "at most \(uploads.perPrincipal) uploads at once")
        }
        return place
    }

    private func end(_ digest: BlobDigest, person: Int64, _ place: Budget<Int64>.Reservation) {
        active.mutate { _ = $0.remove(ActiveUpload(digest: digest, person: person)) }
        place.release()
    }
}
