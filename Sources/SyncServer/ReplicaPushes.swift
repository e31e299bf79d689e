import BlobStore
import CentralStore
import Foundation
import Hummingbird
import NIOPosix
import ServerSupport
import ServiceLifecycle
import TeamDatabase
import TeamworkModel

/// The write side of sync: `POST /v1/replicas/{name}/changes` with
/// `{"changes": [...]}`. Each change is accepted or rejected on its own, with a
/// reason; a change id seen before is accepted again without being applied twice.
struct ReplicaPushes: Sendable {
    let configuration: SyncServer.Configuration
    /// Which replicas the caller may use: the read side's rules.
    let pulls: ReplicaPulls
    /// Made (and its folder checked) once, not per request.
    let directory: ReplicaDirectory
    /// Where pushes wait their turn and are written in groups.
    let queue: PushQueue
    /// Where uploaded files are: an attachment counts only once its file is whole there.
    let blobs: any BlobStore
    /// Ledger checks of changes sent again under way: one per person, one in all, so that pushes sent
    /// again never take the endpoint's master connections from token checks. A push that finds no
    /// place goes without the check: its changes are taken into the replica (applied once later, the
    /// ledger's key), and any this replica refuses are kept on the device for a later sync.
    let ledgerChecks = Budget<Int64>(perPrincipal: 1, total: 1)

    @Sendable func push(_ request: Request, context: SyncRequestContext) async throws -> PushResponse {
        let person = try context.requirePerson()
        let replica = try pulls.replica(named: context, person: person)
        guard replica != .common else { throw HTTPError(.forbidden, message: "the common replica is read-only") }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: PushRequest.maximumBodySize)
        } catch {
            throw HTTPError(
                .contentTooLarge, message: "a push is at most \(PushRequest.maximumBodySize) bytes; send fewer changes at a time")
        }
        let pushed: PushRequest
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            pushed = try decoder.decode(PushRequest.self, from: Data(buffer: body))
        } catch let DecodingError.dataCorrupted(details) {
            throw HTTPError(.badRequest, message: "bad push body: \(details.debugDescription)")
        } catch {
            throw HTTPError(
                .badRequest, message: "bad push body: expected {\"changes\": [{\"id\", \"operation\", \"task_id\", \"made_at\", ...}]}")
        }
        guard pushed.changes.count <= PushRequest.maximumChanges else {
            throw HTTPError(.badRequest, message: "a push holds at most \(PushRequest.maximumChanges) changes")
        }
        guard directory.exists(replica) else {
            throw HTTPError(.notFound, message: "\(replica.name) has not been generated yet; try again shortly")
        }
        // Changes sent again that the master already holds are answered so, and not taken again. When the
        // ledger cannot be asked (`nil`), they are taken like any push, but a refusal by this replica's
        // rules is not said: the master may hold the change already (its effect is then what the rules
        // see), so the device keeps it and sends it again later, when the ledger can answer.
        let ledger = pushed.resent ? await ledgerHolds(pushed.changes, of: person.id, context: context) : []
        let settled = ledger ?? []
        let fresh = pushed.changes.filter { !settled.contains($0.id) }
        // An attachment counts only with its file whole on the server, sent by this person, as the change describes it.
        let blobs = blobs
        let verdicts = try await blockingWork { try Self.attachmentVerdicts(fresh, by: person.id, blobs) }
        let results: [WorkerChangeResult]
        do {
            let taken = try await queue.push(fresh.filter { verdicts[$0.id] == nil }, to: replica, by: person.id)
            // One result per change, in the push's order; an attachment whose file is not whole yet gets
            // none, so it stays queued on the device and goes again once its file is uploaded.
            var next = taken.makeIterator()
            results = pushed.changes.compactMap { change in
                if settled.contains(change.id) { return .settled(change.id) }
                let result: WorkerChangeResult?
                switch verdicts[change.id] {
                case .none: result = next.next()
                case .waitingForFile: result = nil
                case .misdescribed(let reason): result = .rejected(change.id, reason)
                }
                return ledger == nil && result?.status == .rejected ? nil : result
            }
        } catch let busy as ReplicaBusy {
            context.logger.warning("a push found the replica locked", metadata: ["replica": "\(replica.name)", "error": "\(busy)"])
            throw busy
        } catch {
            // A full or read-only disk, a damaged file, a lock held too long: nothing was stored
            // (the write is one SQLite transaction), and the device keeps its changes and retries.
            context.logger.error("cannot store worker changes", metadata: ["replica": "\(replica.name)", "error": "\(error)"])
            throw HTTPError(.serviceUnavailable, message: "\(replica.name) cannot take changes right now; try again")
        }
        // Files now named by an attachment of their sender's no longer count against the sender's allowance.
        // (Not a change sent again that was settled: nothing of it was taken here, its body is only the device's word.)
        let claimed = Set(results.filter { $0.status == .accepted && $0.settled != true }.map(\.id))
        let named = pushed.changes.filter { $0.operation == .attach && claimed.contains($0.id) }.compactMap {
            $0.blob.flatMap(BlobDigest.init(hex:))
        }
        if !named.isEmpty {
            do {
                try await blockingWork { for digest in named { try blobs.claim(digest, by: person.id) } }
            } catch {
                context.logger.warning("cannot mark files as named by their attachments", metadata: ["error": "\(error)"])
            }
        }
        configuration.pushed?(replica.name)
        pulls.watch.changed(path: pulls.paths.path(of: replica))
        for result in results where result.status == .rejected {
            // The id is the client's: cut and defused, so no one's text can forge or flood a log line.
            context.logger.notice(
                "change rejected",
                metadata: [
                    "change": "\(TerminalText.oneLine(result.id))",
                    "reason": "\(result.reason ?? "")",
                ])
        }
        return PushResponse(results: results)
    }
}

extension ReplicaPushes {
    /// Of changes a device sends again, those `person` made that the master's ledger holds, asked
    /// within 2 s on the endpoint's own connections, one check at a time (``ledgerChecks``). With no
    /// answer in time (the master away or failing over) or another check under way, `nil`: the changes are then taken into this host's replica like any push and its
    /// listener brings them to the master later, where the ledger takes each change once.
    func ledgerHolds(_ changes: [WorkerChange], of person: Int64, context: SyncRequestContext) async -> Set<String>? {
        let (ids, store) = (changes.map(\.id), pulls.store)
        guard case .success(let place) = ledgerChecks.reserve(for: person) else { return nil }
        defer { place.release() }
        do {
            return try await withDeadline(.seconds(2), timeout: { StoreUnavailable() }) {
                try await store.run { try await $0.settledChanges(of: person, among: ids) }
            }
        } catch {
            context.logger.notice(
                "cannot ask the master which changes sent again it holds; taking them in here",
                metadata: ["error": "\(error)"])
            return nil
        }
    }

    enum AttachmentVerdict: Equatable {
        /// Its file is not whole on the server (yet).
        case waitingForFile
        /// Its file is there but is not what the change says (its size, or its type by its first bytes).
        case misdescribed(String)
    }

    /// The attachments of `changes` that cannot be taken as they are, by change id; the rules see the rest.
    /// A file counts only when `person` sent it whole themselves: a digest read from a teammate's
    /// attachment in the replica proves nothing, and waits for its bytes like any file not yet sent.
    static func attachmentVerdicts(
        _ changes: [WorkerChange], by person: Int64, _ blobs: any BlobStore
    ) throws -> [String: AttachmentVerdict] {
        var verdicts: [String: AttachmentVerdict] = [:]
        for change in changes where change.operation == .attach {
            guard let digest = change.blob.flatMap(BlobDigest.init(hex:)) else { continue }
            guard case .complete(let size) = try blobs.state(of: digest, for: person) else {
                verdicts[change.id] = .waitingForFile
                continue
            }
            if size != change.size {
                verdicts[change.id] = .misdescribed(
                    "the file \(digest.hex.prefix(12))… is \(size) bytes, not \(change.size.map(String.init) ?? "-")")
            } else if BlobMediaType.sniff(try blobs.head(digest, count: BlobMediaType.sniffedBytes))?.rawValue != change.mediaType {
                verdicts[change.id] = .misdescribed(
                    "the file \(digest.hex.prefix(12))… is not \(change.mediaType ?? "-") by its first bytes")
            }
        }
        return verdicts
    }

    /// Takes the replica's lock, looking every 10 ms (on the lock file opened
    /// once) and sleeping in between, so a wait holds no thread; ``ReplicaBusy``
    /// when it is not free within `limit`.
    static func lock(_ replica: ReplicaID, in directory: ReplicaDirectory, within limit: Duration?) async throws -> ReplicaLock {
        let deadline = limit.map { ContinuousClock.now + $0 }
        let file = try directory.openLock(replica)
        while true {
            if let lock = try file.take() { return lock }
            if let deadline, ContinuousClock.now >= deadline { throw ReplicaBusy(replica: replica) }
            // At SIGTERM a push still waiting for the lock is told to retry (503) at once, rather than
            // holding the service's exit up for the rest of its wait (seen with a 20 s wait).
            if Task.isShuttingDownGracefully { throw ReplicaBusy(replica: replica) }
            try await eventLoopSleep(.milliseconds(10))
        }
    }

    /// Sleeps on a SwiftNIO event loop's timer (epoll's own timeout) instead of
    /// Task.sleep's, which goes through Dispatch's timers. Once, in a full test
    /// run, pushes waiting here got no answer for over 20 s (their 5 s limit
    /// never came) while the rest of the server answered; Dispatch's timers had
    /// been seen misbehaving before (a test process idle for good, its timerfd
    /// armed an hour ahead while 100 ms sleeps were due). Not proven to be the
    /// cause; this wait no longer depends on them.
    static func eventLoopSleep(_ duration: Duration) async throws {
        let nanoseconds = duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
        let scheduled = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: .nanoseconds(nanoseconds)) {}
        try await withTaskCancellationHandler {
            try await scheduled.futureResult.get()
        } onCancel: {
            scheduled.cancel()
        }
    }
}

extension Data {
    init(buffer: ByteBuffer) {
        self = buffer.getData(at: buffer.readerIndex, length: buffer.readableBytes) ?? Data()
    }
}

extension PushResponse: ResponseEncodable {}
