import Foundation
import SyncProtocol
import TeamworkModel

/// One sync: push what is queued, then pull every replica the worker may have,
/// and drop the local copies of replicas they lost.
///
/// One change or one replica the server cannot take never holds back the
/// rest: a replica not generated yet keeps its changes queued (with the
/// reason, for `status`) while the others are pushed and pulled; a change the
/// server refuses for good is set aside as rejected; a server in trouble
/// (5xx, no answer) stops the pushes but the pulls are still tried, and the
/// sync then fails with the queue intact.
public struct Synchronizer: Sendable {
    public struct Report: Sendable, Equatable {
        public var pulledRows = 0
        public var pushed = 0
        public var rejected = 0
        /// Changes accepted at an earlier sync and sent again, the master not having confirmed them.
        public var resent = 0
        /// Of those, changes a host said the master holds: no longer kept for sending again.
        public var confirmed = 0
        /// Accepted changes still waiting for the master's confirmation after this sync.
        public var unconfirmed = 0
        public var refetched: [String] = []
        public var removed: [String] = []
        /// Files of attachments uploaded this time, and the bytes sent (a resumed upload sends only the rest).
        public var uploadedFiles = 0
        public var uploadedBytes: Int64 = 0
        /// Changes still queued after this sync.
        public var waiting = 0
        /// What could not be done this time, one line each.
        public var problems: [String] = []
    }

    public let client: SyncClient
    public let store: LocalStore
    public var pageSize = 2_000
    /// Changes per push request.
    public var pushSize = 500

    public init(client: SyncClient, store: LocalStore) {
        self.client = client
        self.store = store
    }

    public func sync(progress: (String) -> Void = { _ in }) async throws -> Report {
        var report = Report()
        try await client.checkReachable()
        let listing = try await client.listing()
        try store.set("person_id", String(listing.person))
        let wanted = listing.replicas
        let names = Set(wanted.map(\.name))
        for local in try store.replicas() where !names.contains(local.name) {
            try store.remove(replica: local.name)
            report.removed.append(local.title)
        }
        for entry in wanted {
            try store.register(name: entry.name, kind: entry.kind, title: entry.title, slug: entry.slug, available: entry.available)
        }
        if let home = try store.checkinReplica() {
            try store.moveWaitingCheckins(to: home)
        }

        // What hosts accepted before and the master has not confirmed goes first, ahead of the newer
        // changes that may follow from it (a completion after a start).
        var serverTrouble = try await resendUnconfirmed(listed: names, by: listing.person, report: &report)
        if serverTrouble == nil { serverTrouble = try await pushQueued(listed: names, by: listing.person, report: &report) }

        for local in try store.replicas() {
            guard wanted.first(where: { $0.name == local.name })?.available == true else { continue }
            do {
                if local.kind == "common" {
                    report.pulledRows += try await pullCommon(local)
                } else {
                    report.pulledRows += try await pull(local, report: &report, progress: progress)
                }
            } catch let failure as SyncClient.Failure where failure.kind == .rejected || failure.status == 403 {
                report.problems.append("\(local.title) not pulled: \(failure.message)")
            }
        }
        do {
            try store.replacePositions(try await client.positions())
        } catch let failure as SyncClient.Failure where failure.kind != .refused || failure.status != 401 {
            // Positions come from the master, which may be away while the replicas are served:
            // the tasks are what a sync is for, so the last positions stay and the sync goes on.
            report.problems.append("positions not fetched (the last ones are kept): \(failure.message)")
        }
        try store.set("last_sync", ISODate.format(Date()))
        try store.pruneBlobs()
        report.waiting = try store.pending().count
        report.unconfirmed = try store.unconfirmedCount()
        if let serverTrouble {
            throw SyncClient.Failure(
                kind: .unreachable,
                message: "pulled \(quantity(report.pulledRows, "change")), but \(quantity(report.waiting, "change")) "
                    + "\(report.waiting == 1 ? "stays" : "stay") queued: \(serverTrouble.message)", status: serverTrouble.status)
        }
        return report
    }

    /// Pushes each replica's queue; returns the failure that stopped the pushes
    /// when the server is in trouble (the rest then waits for the next sync).
    /// Only `person`'s own changes leave: queued work is never sent under another person's token.
    private func pushQueued(listed names: Set<String>, by person: Int64, report: inout Report) async throws -> SyncClient.Failure? {
        let queued = Dictionary(grouping: try store.pending(madeBy: person), by: \.replica)
        for (replica, queuedChanges) in queued.sorted(by: { $0.key < $1.key }) {
            guard names.contains(replica) else {
                try record(queuedChanges.map { .rejected($0.change.id, "you no longer have \(replica)") }, in: &report)
                continue
            }
            // Files first: an attachment goes only once its file is whole on the server.
            let (changes, trouble) = try await uploadFiles(of: queuedChanges, report: &report)
            if let trouble { return trouble }
            batches: for start in stride(from: 0, to: changes.count, by: pushSize) {
                let batch = changes[start..<min(start + pushSize, changes.count)].map(\.change)
                do {
                    try record(try await client.push(batch, to: replica), in: &report)
                } catch let failure as SyncClient.Failure {
                    switch (failure.kind, failure.status) {
                    case (.unreachable, _):
                        try store.noteWaiting(batch.map(\.id), because: failure.message)
                        return failure
                    case (.refused, 401):
                        throw failure
                    case (.rejected, 404):
                        // Not generated yet: the changes wait, the other replicas go on.
                        try store.noteWaiting(changes.map(\.change.id), because: failure.message)
                        report.problems.append("\(replica): \(failure.message)")
                        break batches
                    default:
                        try await setAsideRefused(batch, in: replica, failure: failure, report: &report)
                    }
                }
            }
        }
        return nil
    }

    /// Sends again, at most ``pushSize`` a sync, the changes hosts accepted that the master has not
    /// confirmed: the host that accepted one may have died with its disk before its listener took it
    /// to the master. The host asked answers those the master's ledger holds as settled (they are no
    /// longer kept) and takes the rest like any push; the ledger takes each change once, whichever
    /// hosts carry it. Returns the failure that stopped it when the server is in trouble.
    private func resendUnconfirmed(
        listed names: Set<String>, by person: Int64, report: inout Report
    ) async throws
        -> SyncClient.Failure?
    {
        let kept = Dictionary(grouping: try store.unconfirmed(madeBy: person, limit: pushSize), by: \.replica)
        for (replica, entries) in kept.sorted(by: { $0.key < $1.key }) {
            guard names.contains(replica) else {
                try store.giveUpConfirming(entries.map(\.change.id))
                report.problems.append(
                    "\(quantity(entries.count, "change")) sent to \(replica) cannot be confirmed: you no longer have \(replica)")
                continue
            }
            // Files first, as for any push: the host asked may not have the file of an attachment another took.
            let (sendable, trouble) = try await uploadFiles(of: entries, report: &report)
            if let trouble { return trouble }
            let batch = sendable.map(\.change)
            guard !batch.isEmpty else { continue }
            do {
                try recordResent(try await client.push(batch, to: replica, resent: true), in: &report)
            } catch let failure as SyncClient.Failure {
                switch (failure.kind, failure.status) {
                case (.unreachable, _): return failure
                case (.refused, 401): throw failure
                default:
                    // Refused as a whole (a 4xx: too big, one bad change): one at a time, so one change the
                    // server will never take is refused alone and never holds back the others.
                    for change in batch {
                        do {
                            try recordResent(try await client.push([change], to: replica, resent: true), in: &report)
                        } catch let single as SyncClient.Failure where single.kind == .rejected || single.status == 403 {
                            try record([.rejected(change.id, single.message)], in: &report)
                        }
                    }
                }
            }
        }
        return nil
    }

    /// Uploads the files of the queued attachments, each resumed from what the server already
    /// holds (a file it has whole is not sent again). Returns the changes to push: all but an
    /// attachment whose file could not be uploaded and the later changes of its task, which wait
    /// (a completion must not go ahead of the photo it needs). A file the server refuses for good
    /// (its type, its size) refuses its attachment; no answer ends the pushes, as for a push.
    private func uploadFiles(
        of changes: [(replica: String, change: WorkerChange)],
        report: inout Report
    ) async throws -> ([(replica: String, change: WorkerChange)], SyncClient.Failure?) {
        var sendable: [(replica: String, change: WorkerChange)] = []
        var held: Set<Int64> = []
        var done: Set<String> = []
        for entry in changes {
            let change = entry.change
            if let task = change.taskID, held.contains(task) { continue }
            guard change.operation == .attach, let blob = change.blob, let size = change.size, !done.contains(blob) else {
                sendable.append(entry)
                continue
            }
            do {
                let sent = try await upload(blob, size: size, for: change.taskID)
                if sent > 0 {
                    report.uploadedBytes += sent
                    report.uploadedFiles += 1
                }
                done.insert(blob)
                sendable.append(entry)
            } catch let failure as SyncClient.Failure {
                let sameTask = changes.filter { $0.change.taskID == change.taskID && $0.change.id != change.id }.map(\.change.id)
                switch (failure.kind, failure.status) {
                case (.refused, 401):
                    throw failure
                case (.rejected, 400?), (.rejected, 413?), (.rejected, 415?), (.rejected, 422?):
                    // The server will never take this file: its attachment is refused, the task's later changes wait.
                    try record([.rejected(change.id, "its file was refused: \(failure.message)")], in: &report)
                    try store.noteWaiting(sameTask, because: "an attachment of this task was refused")
                default:
                    // Not this time (no answer, a slow link, a server that cannot store files now): the
                    // attachment and the task's later changes wait; the other tasks' changes go on.
                    try store.noteWaiting([change.id] + sameTask, because: failure.message)
                    report.problems.append("a file of task \(change.taskID.map(String.init) ?? "-") not uploaded yet: \(failure.message)")
                }
                if let task = change.taskID { held.insert(task) }
            }
        }
        return (sendable, nil)
    }

    /// Bytes per upload request: a piece a slow link (100 kbit/s) sends well within a request's deadline.
    static let uploadPiece = 256 * 1024

    /// Uploads the kept file `digest` from where the server stands, as proof for task `task` (it goes
    /// before files nobody announced on a full disk); the bytes sent (0 when the server had it).
    private func upload(_ digest: String, size: Int64, for task: Int64?) async throws -> Int64 {
        var (offset, complete) = try await client.blobState(digest)
        guard !complete else { return 0 }
        if offset == size {
            // Every byte is there but the file was not finished (the server stopped right then): finish it.
            (offset, complete) = try await client.sendBlob(digest, offset: size, length: size, Data(), for: task)
            if complete { return 0 }
        }
        guard let file = FileHandle(forReadingAtPath: store.blobPath(digest)) else {
            throw SyncClient.Failure(kind: .rejected, message: "the file \(digest.prefix(12))… is no longer on this device")
        }
        defer { try? file.close() }
        var sent: Int64 = 0
        var stalled = 0
        while !complete {
            // The server holds more than the file (another file under this name, cut): it starts from 0.
            if offset > size { offset = 0 }
            try file.seek(toOffset: UInt64(offset))
            let piece = try file.read(upToCount: Self.uploadPiece) ?? Data()
            guard !piece.isEmpty else {
                throw SyncClient.Failure(kind: .rejected, message: "the file \(digest.prefix(12))… on this device is shorter than its size")
            }
            let before = offset
            (offset, complete) = try await client.sendBlob(digest, offset: offset, length: size, piece, for: task)
            // Bytes the server took: a piece answered with another offset (409) took none.
            sent += max(0, offset - before)
            // The server moves on with every piece; one that does not, three times over, is not going to.
            stalled = offset > before || complete ? 0 : stalled + 1
            if stalled >= 3 {
                throw SyncClient.Failure(
                    kind: .unreachable, message: "the upload of \(digest.prefix(12))… makes no progress; it stays queued")
            }
        }
        return sent
    }

    /// The server refused a whole push (a 4xx other than 404): sends its changes
    /// one at a time so that only the ones it refuses are set aside, with its reason.
    private func setAsideRefused(
        _ batch: [WorkerChange], in replica: String, failure: SyncClient.Failure,
        report: inout Report
    ) async throws {
        guard batch.count > 1 else {
            try record([.rejected(batch[0].id, failure.message)], in: &report)
            return
        }
        for change in batch {
            do {
                try record(try await client.push([change], to: replica), in: &report)
            } catch let single as SyncClient.Failure where single.kind == .rejected || single.status == 403 {
                try record([.rejected(change.id, single.message)], in: &report)
            }
        }
    }

    /// What a host said of changes sent again: settled ones are confirmed, the rest sent again.
    private func recordResent(_ results: [WorkerChangeResult], in report: inout Report) throws {
        try store.record(results)
        report.resent += results.filter { $0.status == .accepted && $0.settled != true }.count
        report.confirmed += results.filter { $0.settled == true }.count
        report.rejected += results.filter { $0.status == .rejected }.count
    }

    private func record(_ results: [WorkerChangeResult], in report: inout Report) throws {
        try store.record(results)
        report.pushed += results.filter { $0.status == .accepted }.count
        report.rejected += results.filter { $0.status == .rejected }.count
    }

    /// A page that came on a live stream (``SyncClient/follow``), applied when it goes on from where
    /// the device's copy of `name` stands. False when it does not (a new copy, a page from
    /// another position): then a whole sync brings the replica up to date. Checked in the
    /// transaction that applies it: a sync in another process may have moved the copy on.
    func apply(streamed line: Data, to name: String) throws -> Bool {
        struct Head: Decodable {
            var epoch: String
            var refetch: Bool
            var since: Int64
        }
        let decoder = TeamworkJSON.decoder()
        let head = try decoder.decode(Head.self, from: line)
        guard !head.refetch else { return false }
        let continuing = (epoch: head.epoch, since: head.since)
        if name == "common" {
            return try store.apply(common: [decoder.decode(CommonPage.self, from: line)], replace: false, continuing: continuing) != nil
        }
        return try store.apply([decoder.decode(ChangePage.self, from: line)], to: name, replace: false, continuing: continuing) != nil
    }

    /// A team or personal replica: pages since the device's position, or a whole new copy.
    private func pull(_ local: LocalStore.Replica, report: inout Report, progress: (String) -> Void) async throws -> Int {
        var pages: [ChangePage] = []
        var epoch = local.epoch
        var position = local.position
        var replace = false
        var more = true
        var rows = 0
        while more {
            let page = try await client.page(local.name, epoch: epoch, since: position, limit: pageSize)
            if page.refetch {
                // A new copy: gathered whole, swapped in at the end.
                replace = true
                pages.removeAll()
            }
            if replace {
                pages.append(page)
                progress("\(local.title): \(pages.reduce(0) { $0 + $1.tasks.count }) tasks fetched")
            } else {
                rows += try store.apply([page], to: local.name, replace: false) ?? 0
            }
            epoch = page.epoch
            position = page.upTo
            more = page.more
        }
        if replace {
            rows += try store.apply(pages, to: local.name, replace: true) ?? 0
            report.refetched.append(local.title)
        }
        return rows
    }

    /// The common replica: the same paging, into the device's people, teams and memberships.
    private func pullCommon(_ local: LocalStore.Replica) async throws -> Int {
        var pages: [CommonPage] = []
        var epoch = local.epoch
        var position = local.position
        var replace = false
        var rows = 0
        var more = true
        while more {
            let page = try await client.commonPage(epoch: epoch, since: position, limit: pageSize)
            if page.refetch {
                replace = true
                pages.removeAll()
            }
            if replace { pages.append(page) } else { rows += try store.apply(common: [page], replace: false) ?? 0 }
            epoch = page.epoch
            position = page.upTo
            more = page.more
        }
        if replace { rows += try store.apply(common: pages, replace: true) ?? 0 }
        return rows
    }
}
