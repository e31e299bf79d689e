import Foundation
import SyncProtocol
import TeamworkModel

/// Keeps a device current until cancelled (`teamwork-worker watch`): syncs,
/// then follows every replica at once (live mode, `stream=N`: each change comes
/// as a page on an open answer and is applied as it comes) while watching the
/// device's own queue, and syncs again as soon as something is queued: a
/// change on the server reaches the device within a second, and work done on
/// the device leaves as soon as it is queued.
///
/// A server that cannot be reached (restarting, the network gone) is tried
/// again as ``Retrying`` says (1 s up to 30 s) and the watch resumes by itself; a
/// refused token ends it. Each sync's news comes out as one line per thing a
/// person cares about (``Watcher/News``).
public struct Watcher: Sendable {
    public let synchronizer: Synchronizer
    /// How long one live-mode request waits on the server.
    public var wait: Duration = .seconds(25)
    /// How often the device's queue is looked at while waiting.
    public var queueInterval: Duration = .milliseconds(250)
    /// Full jitter: after a restart, a fleet of watching devices comes back spread over the
    /// window, not all in the same instant (docs/operations.md).
    public var backoff = Watcher.reconnecting()

    /// How a watching device tries the server again after a failure: the one policy, which the
    /// load benchmark's simulated fleet uses too (`random`: a seeded source there).
    public static func reconnecting(random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()) -> Backoff {
        Backoff(initial: .seconds(1), maximum: .seconds(30), jitter: .full, random: random)
    }

    public init(synchronizer: Synchronizer) {
        self.synchronizer = synchronizer
    }

    /// Runs until the task is cancelled. `say` gets one line per piece of news
    /// and per change of connectivity. Throws only when the server refuses the token.
    public func run(say: @escaping @Sendable (String) -> Void) async throws {
        let offline = Locked(false)
        let refused = Locked<SyncClient.Failure?>(nil)
        let store = synchronizer.store
        await Retrying(backoff).forever(failed: { ending, _ in
            switch ending {
            case .failed(let failure as SyncClient.Failure):
                if !offline.value { say("Offline: \(failure.message). Trying again by itself.") }
                offline.mutate { $0 = true }
            case .failed(let error):
                // Anything else (the device's database busy with another command, a page it
                // could not apply) is tried again too: a watch stops only when told to.
                say("Sync did not finish: \(error). Trying again by itself.")
            case .returned:
                break
            }
        }) { progress in
            // A refused token ends the watch, whether a sync or a stream heard it.
            func endingOnRefusal(_ step: () async throws -> Void) async throws {
                do {
                    try await step()
                } catch let failure as SyncClient.Failure where failure.kind == .refused && failure.status == 401 {
                    refused.mutate { $0 = failure }
                    throw Retrying.Stop()
                }
            }
            while true {
                let before = try Snapshot(store)
                try await endingOnRefusal { _ = try await synchronizer.sync() }
                if offline.value { say("Back online.") }
                offline.mutate { $0 = false }
                progress.made()
                for line in try Snapshot(store).news(since: before) { say(line) }
                try await endingOnRefusal { try await follow(say: say) }
            }
        }
        if let failure = refused.value { throw failure }
    }

    /// Follows every replica live (one stream each, ``SyncClient/follow``), applying each page as
    /// it comes and saying its news, and returns when a whole sync is due: something queued on the
    /// device, or a page that does not go on from the device's copy (a rebuilt replica). A stream
    /// whose time is up is opened again from where the copy stands; one that fails ends the
    /// follow with its failure, and the loop tries again as after any failed sync.
    private func follow(say: @Sendable @escaping (String) -> Void) async throws {
        let store = synchronizer.store
        let (synchronizer, wait, interval) = (self.synchronizer, self.wait, queueInterval)
        let replicas = try store.replicas().filter(\.available)
        // Streams of several replicas apply one page at a time, so that each page's news is its own.
        let applying = NSLock()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for replica in replicas {
                group.addTask {
                    while true {
                        guard let local = try await blockingWork({ try store.replicas().first(where: { $0.name == replica.name }) })
                        else { return }
                        let lines = synchronizer.client.follow(
                            local.name, epoch: local.epoch, since: local.position,
                            limit: synchronizer.pageSize, for: wait)
                        let opened = ContinuousClock.now
                        for try await line in lines {
                            // The lock and the device database's writes (which may wait on another command's
                            // write) are taken off the cooperative threads: a stream waiting there would
                            // stall every other stream of this process on a small machine.
                            let goesOn = try await blockingWork {
                                try applying.withLock {
                                    let before = try Snapshot(store)
                                    guard try synchronizer.apply(streamed: line, to: local.name) else { return false }
                                    for news in try Snapshot(store).news(since: before) { say(news) }
                                    return true
                                }
                            }
                            if !goesOn { return }
                        }
                        // Ended before its time with no failure: the server is going away, or ended it for
                        // this person's newer streams. Opened again at once, it could end again at once.
                        if ContinuousClock.now - opened < wait - .seconds(1) {
                            throw SyncClient.Failure(kind: .unreachable, message: "the server ended the live stream early")
                        }
                    }
                }
            }
            group.addTask {
                while try await blockingWork({ try store.pending().isEmpty }) {
                    try await Task.sleep(for: interval)
                }
            }
            if replicas.isEmpty {
                group.addTask { try await Task.sleep(for: wait) }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    /// What the device holds, to tell a person what a sync brought.
    struct Snapshot {
        var me: Int64?
        var tasks: [Int64: LocalTask]
        var refused: [String: QueuedChange]

        init(_ store: LocalStore) throws {
            me = try store.setting("person_id").flatMap { Int64($0) }
            tasks = Dictionary(try store.tasks().map { ($0.id, $0) }) { first, _ in first }
            refused = Dictionary(try store.outbox().filter { $0.state == "rejected" || $0.state == "refused" }.map { ($0.changeID, $0) }) {
                first, _ in first
            }
        }

        /// One line per piece of news: a new task for me or my team, a task of
        /// mine changed or gone, a change of mine refused.
        func news(since before: Snapshot) -> [String] {
            var lines: [String] = []
            let newlyRefused = refused.values.filter { before.refused[$0.changeID] == nil }
            // A task back as the master has it because a change was refused: the refusal's line says it all.
            let explained = Set(newlyRefused.compactMap(\.taskID))
            for task in tasks.values.sorted(by: { $0.id < $1.id }) where !explained.contains(task.id) {
                guard let old = before.tasks[task.id] else {
                    let whose = task.assigneeID == me ? "for you" : task.assigneeID == nil ? "free for your team" : nil
                    if let whose { lines.append("New task \(task.id) \(whose): \(task.title)\(Self.due(task))") }
                    continue
                }
                guard task.assigneeID == me || old.assigneeID == me else { continue }
                if old.assigneeID == me && task.assigneeID != me {
                    lines.append("Task \(task.id) is no longer yours: \(task.title)")
                    continue
                }
                if old.assigneeID != me {
                    lines.append("Task \(task.id) is now yours: \(task.title)\(Self.due(task))")
                    continue
                }
                var changed: [String] = []
                if old.title != task.title { changed.append("title") }
                if old.status != task.status { changed.append("status \(old.status.rawValue) → \(task.status.rawValue)") }
                if old.window != task.window { changed.append("window \(task.window.map { $0.compact(in: task.zone) } ?? "none")") }
                if old.dueAt != task.dueAt { changed.append("due \(task.dueAt.map { task.zone.format($0) } ?? "none")") }
                if old.priority != task.priority { changed.append("priority \(task.priority.rawValue)") }
                if old.location != task.location { changed.append("site \(task.address ?? "none")") }
                if old.requiredSkills != task.requiredSkills {
                    changed.append("needs \(task.requiredSkills.isEmpty ? "no skill" : task.requiredSkills.joined(separator: ", "))")
                }
                if old.checklist != task.checklist { changed.append("checklist") }
                if old.description != task.description { changed.append("description") }
                if !changed.isEmpty { lines.append("Task \(task.id) changed (\(changed.joined(separator: ", "))): \(task.title)") }
            }
            for old in before.tasks.values.sorted(by: { $0.id < $1.id }) where tasks[old.id] == nil && old.assigneeID == me {
                lines.append("Task \(old.id) was taken off your list: \(old.title)")
            }
            for change in newlyRefused.sorted(by: { $0.changeID < $1.changeID }) {
                let what = change.taskID.map { "\(change.operation) of task \($0)" } ?? change.operation
                lines.append("Your \(what) was refused: \(change.reason ?? "no reason given")")
            }
            return lines
        }

        static func due(_ task: LocalTask) -> String {
            let due =
                task.window.map { ", \($0.compact(in: task.zone))" } ?? task.dueAt.map { ", due \(task.zone.format($0))" } ?? ""
            return due + (task.priority == .normal ? "" : ", \(task.priority.rawValue)")
        }
    }
}
