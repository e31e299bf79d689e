import CentralStore
import Foundation
import Hummingbird
import NIOPosix
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

    @Sendable func push(_ request: Request, context: SyncRequestContext) async throws -> PushResponse {
        let person = try context.requirePerson()
        let replica = try await pulls.replica(named: context, person: person)
        guard replica != .common else { throw HTTPError(.forbidden, message: "the common replica is read-only") }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: PushRequest.maximumBodySize)
        } catch {
            throw HTTPError(.contentTooLarge, message: "a push is at most \(PushRequest.maximumBodySize) bytes; send fewer changes at a time")
        }
        let pushed: PushRequest
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            pushed = try decoder.decode(PushRequest.self, from: Data(buffer: body))
        } catch let DecodingError.dataCorrupted(details) {
            throw HTTPError(.badRequest, message: "bad push body: \(details.debugDescription)")
        } catch {
            throw HTTPError(.badRequest, message: "bad push body: expected {\"changes\": [{\"id\", \"operation\", \"task_id\", \"made_at\", ...}]}")
        }
        guard pushed.changes.count <= PushRequest.maximumChanges else {
            throw HTTPError(.badRequest, message: "a push holds at most \(PushRequest.maximumChanges) changes")
        }
        guard directory.exists(replica) else {
            throw HTTPError(.notFound, message: "\(replica.name) has not been generated yet; try again shortly")
        }
        let results: [WorkerChangeResult]
        do {
            results = try await queue.push(pushed.changes, to: replica, by: person.id)
        } catch let busy as ReplicaBusy {
            context.logger.warning("a push found the replica locked", metadata: ["replica": "\(replica.name)", "error": "\(busy)"])
            throw HTTPError(.serviceUnavailable, message: "\(replica.name) is busy; try again shortly")
        } catch {
            // A full or read-only disk, a damaged file, a lock held too long: nothing was stored
            // (the write is one SQLite transaction), and the device keeps its changes and retries.
            context.logger.error("cannot store worker changes", metadata: ["replica": "\(replica.name)", "error": "\(error)"])
            throw HTTPError(.serviceUnavailable, message: "\(replica.name) cannot take changes right now; try again")
        }
        configuration.pushed?(replica.name)
        pulls.watch.changed(path: pulls.path(of: replica))
        for result in results where result.status == .rejected {
            // The id is the client's: cut and defused, so no one's text can forge or flood a log line.
            context.logger.notice("change rejected", metadata: [
                "change": "\(TerminalText.oneLine(result.id))",
                "reason": "\(result.reason ?? "")",
            ])
        }
        return PushResponse(results: results)
    }
}

extension ReplicaPushes {
    /// Takes the replica's lock, looking every 10 ms (on the lock file opened
    /// once) and sleeping in between, so a wait holds no thread; ``ReplicaBusy``
    /// when it is not free within `limit`.
    static func lock(_ replica: ReplicaID, in directory: ReplicaDirectory, within limit: Duration?) async throws -> ReplicaLock {
        let deadline = limit.map { ContinuousClock.now + $0 }
        let file = try directory.openLock(replica)
        while true {
            if let lock = try file.take() { return lock }
            if let deadline, ContinuousClock.now >= deadline { throw ReplicaBusy(replica: replica) }
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
