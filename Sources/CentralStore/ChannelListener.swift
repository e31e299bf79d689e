import Foundation
import Logging
import PostgresNIO
import TeamworkModel

/// What listening on a channel of the master comes to, as it happens (``CentralStore/listen(on:at:backoff:queryDeadline:logger:_:)``).
public enum ChannelEvent: Sendable {
    /// The LISTEN is registered on `store`'s connection: notifications sent before now were not
    /// heard (after a loss too), so whatever they would have said is to be looked at now. The store
    /// may run the listener's own queries while it listens; when its connection fails (the next
    /// ``lost(_:retryIn:)``) or the listening ends, those queries fail.
    case listening(CentralStore)
    /// A notification arrived on the channel.
    case notified
    /// The connection failed or the LISTEN ended; listening again after `retryIn`.
    case lost(Retrying.Ending, retryIn: Duration)
}

extension CentralStore {
    /// The channel every change-feed append notifies, once per committed transaction.
    public static let feedChannel = "teamwork_feed"

    /// The channel `teamwork_access_changed()` notifies when a token, a membership,
    /// a person or a team changes in a way that can change who may read what.
    public static let accessChannel = "teamwork_access"

    /// The channel a change of a recurring plan notifies (`teamwork_plans_changed()`).
    public static let plansChannel = "teamwork_plans"

    /// The channel anything queued for sending out notifies (a webhook delivery, a customer's
    /// message, messages released from a hold).
    public static let outboxChannel = "teamwork_outbox"

    /// Listens on `channel` of the master at `url`, connecting again as ``Retrying`` says after
    /// each loss, and hands what happens to `body` as a sequence of ``ChannelEvent``s, until `body`
    /// returns or the task is cancelled; then the LISTEN's connection is closed before this returns.
    /// The one place a part of Teamwork listens: the feed, access changes, plans.
    public static func listen(
        on channel: String, at url: DatabaseURL,
        backoff: Backoff = Backoff(initial: .milliseconds(200), maximum: .seconds(5)),
        queryDeadline: Duration? = nil, logger: Logger,
        _ body: (AsyncStream<ChannelEvent>) async -> Void
    ) async {
        let (events, continuation) = AsyncStream.makeStream(of: ChannelEvent.self)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await Retrying(backoff).forever(failed: { ending, delay in continuation.yield(.lost(ending, retryIn: delay)) }) {
                    progress in
                    try await withStore(url, queryDeadline: queryDeadline, logger: logger) { store in
                        try await store.listen(
                            on: channel,
                            ready: {
                                progress.made()
                                continuation.yield(.listening(store))
                            }, notified: { continuation.yield(.notified) })
                    }
                }
                continuation.finish()
            }
            await body(events)
            group.cancelAll()
        }
    }

    /// Listens on `channel` on this connection until cancelled or the connection fails; `ready` once the
    /// LISTEN is registered. The connection goes on running this store's other queries meanwhile.
    public func listen(on channel: String, ready: @Sendable () -> Void, notified: @Sendable () -> Void) async throws {
        do {
            try await connection.listen(on: channel) { notifications in
                ready()
                for try await _ in notifications { notified() }
            }
        } catch {
            throw StoreError.map(error)
        }
    }
}
