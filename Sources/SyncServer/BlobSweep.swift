import BlobStore
import CentralStore
import Foundation
import Logging
import ServiceLifecycle
import TeamworkModel

/// Keeps the blob folder to what is needed: uploads unfinished a day after they began
/// are removed, and so are files no attachment on the master names once a week
/// has passed since anyone last sent them (an attachment's record reaches the
/// master after its file: the grace covers a device that uploaded and then
/// stayed offline). Asking about a file keeps nothing: only sending it does.
/// Marks of files not yet named by their sender's attachment lapse after the
/// same week. `teamwork-service run` sweeps every hour; each pass reports progress.
public struct BlobSweep: Service {
    public let databaseURL: DatabaseURL
    public let store: any BlobStore
    public let logger: Logger
    public var interval: Duration = .seconds(3_600)
    public var unfinishedGrace: TimeInterval = 86_400
    public var unreferencedGrace: TimeInterval = 7 * 86_400
    public var afterPass: @Sendable () -> Void = {}

    public init(databaseURL: DatabaseURL, store: any BlobStore, logger: Logger) {
        self.databaseURL = databaseURL
        self.store = store
        self.logger = logger
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await Retrying(Backoff(initial: .seconds(1), maximum: .seconds(60))).forever(failed: { ending, delay in
                if case .failed(let error) = ending {
                    logger.warning("blob sweep failed; retrying", metadata: ["error": "\(error)", "retry_in": "\(delay)"])
                }
            }) { progress in
                while !Task.isCancelled {
                    let removed = try await sweep(now: Date())
                    progress.made()
                    afterPass()
                    if removed > 0 { logger.info("removed unneeded files from the blob folder", metadata: ["files": "\(removed)"]) }
                    try await Task.sleep(for: interval)
                }
            }
        }
    }

    /// One pass; how many files it removed.
    public func sweep(now: Date) async throws -> Int {
        let referenced = try await CentralStore.withStore(databaseURL, queryDeadline: .seconds(60), logger: logger) {
            try await $0.referencedBlobs()
        }
        let (store, unfinishedGrace, unreferencedGrace) = (store, unfinishedGrace, unreferencedGrace)
        return try await blockingWork {
            var removed = 0
            let inventory = try store.inventory()
            for upload in inventory.partial where now.timeIntervalSince(upload.time) > unfinishedGrace {
                try store.discard(upload)
                removed += 1
            }
            for mark in inventory.pending where now.timeIntervalSince(mark.time) > unreferencedGrace {
                try store.discard(mark)
            }
            for mark in inventory.sent where now.timeIntervalSince(mark.time) > 86_400 {
                try store.discardSent(mark)
            }
            for blob in inventory.complete
            where !referenced.contains(blob.digest.hex) && now.timeIntervalSince(blob.sent) > unreferencedGrace {
                // Sent again since the inventory was taken (its sender was told 201): it stays.
                if let sent = store.lastSent(blob.digest), now.timeIntervalSince(sent) <= unreferencedGrace { continue }
                try store.remove(blob.digest)
                removed += 1
            }
            return removed
        }
    }
}
