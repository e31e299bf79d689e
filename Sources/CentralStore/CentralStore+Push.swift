import Foundation
import NIOCore
import PostgresNIO
import TeamworkModel

/// Web Push (migration 0050, docs/phone.md "Notifications"): the service's VAPID key, the phones'
/// subscriptions (kept with their tokens) and the messages that wait for them.
extension CentralStore {
    /// One phone's due messages, sent as one push: the subscription and what to tell it.
    public struct DuePush: Sendable {
        public struct Message: Sendable, Equatable {
            public var id: Int64
            public var kind: String
            public var taskID: Int64
            /// As claimed: the same news coming again meanwhile moves it on (the message is sent again).
            public var generation: Int32 = 0
            /// When the task last changed on the master (ms since 1970), as claimed: the phone shows the
            /// news once its copy is at least this recent. Nil for a task no longer there.
            public var taskChangedAt: Int64? = nil
        }

        public var tokenID: Int64
        public var endpoint: String
        public var p256dh: [UInt8]
        public var auth: [UInt8]
        /// The most attempts any of its messages has had.
        public var attempts: Int
        public var messages: [Message]
    }

    /// What came of sending a phone's push.
    public enum PushOutcome: Sendable, Equatable {
        /// The push service took it: the messages are done.
        case sent
        /// Try again after the delay.
        case retry(after: Duration, reason: String)
        /// The subscription has ended (404 or 410 from the push service, or an address the service may not reach): it goes.
        case gone(reason: String)
        /// No more attempts: the messages are dropped (the phone syncs anyway).
        case dropped(reason: String)
    }

    /// The VAPID key pair every host signs with: the one kept, or `proposed` when none is kept yet.
    public func pushKey(proposed: (privateKey: [UInt8], publicKey: [UInt8])) async throws -> (privateKey: [UInt8], publicKey: [UInt8]) {
        let row = try await rows(
            """
            SELECT private_key, public_key FROM teamwork_push_key(\(ByteBuffer(bytes: proposed.privateKey)), \(ByteBuffer(bytes: proposed.publicKey)))
            """)[0]
        let (privateKey, publicKey) = try row.decode((ByteBuffer, ByteBuffer).self)
        return (Array(privateKey.readableBytesView), Array(publicKey.readableBytesView))
    }

    /// The public half of the VAPID key pair (the sync endpoint's: it never holds the private half).
    public func pushPublicKey(proposed: (privateKey: [UInt8], publicKey: [UInt8])) async throws -> [UInt8] {
        let row = try await rows(
            """
            SELECT teamwork_push_public_key(\(ByteBuffer(bytes: proposed.privateKey)), \(ByteBuffer(bytes: proposed.publicKey)))
            """)[0]
        return Array(try row.decode(ByteBuffer.self).readableBytesView)
    }

    /// Keeps the push subscription of the phone holding `secret`; false when the token is not live.
    public func setPushSubscription(secret: String, endpoint: String, p256dh: [UInt8], auth: [UInt8]) async throws -> Bool {
        guard TokenSecret.isWellFormed(secret) else { return false }
        return try await rows(
            """
            SELECT teamwork_set_push_subscription(\(secret), \(endpoint), \(ByteBuffer(bytes: p256dh)), \(ByteBuffer(bytes: auth)))
            """)[0].decode(Bool.self)
    }

    /// Ends the push subscription of the phone holding `secret`; true when there was one.
    @discardableResult
    public func removePushSubscription(secret: String) async throws -> Bool {
        guard TokenSecret.isWellFormed(secret) else { return false }
        return try await rows("SELECT teamwork_remove_push_subscription(\(secret))")[0].decode(Bool.self)
    }

    /// Takes the due messages of up to `limit` phones (at most `perPhone` each, the oldest first)
    /// and holds them for `lease`: one push in flight per phone, and none while a message of the
    /// phone waits for its retry (the backoff is the subscription's). Rows another host holds are
    /// skipped, never waited for. First drops what no longer needs saying: a message a day old, and
    /// news of work that is no longer the phone's person's.
    public func claimDuePushes(limit: Int, perPhone: Int = 50, lease: Duration) async throws -> [DuePush] {
        _ = try await rows(
            """
            DELETE FROM push_messages WHERE id IN (
                SELECT m.id FROM push_messages m
                 WHERE m.due_at <= now()
                   AND (m.queued_at < now() - interval '1 day'
                        OR (m.kind IN ('assigned', 'changed')
                            AND NOT EXISTS (SELECT 1 FROM tasks t JOIN push_subscriptions s ON s.token_id = m.token_id
                                             WHERE t.id = m.task_id AND t.assignee_id = s.person_id)))
                   FOR UPDATE OF m SKIP LOCKED)
            """)
        let seconds = Double(lease.components.seconds)
        return try await rows(
            """
            WITH due AS (
                SELECT m.token_id FROM push_messages m
                  JOIN push_subscriptions s ON s.token_id = m.token_id
                  JOIN access_tokens a ON a.id = s.token_id AND a.revoked_at IS NULL
                 WHERE m.due_at <= now()
                   AND NOT EXISTS (SELECT 1 FROM push_messages h WHERE h.token_id = m.token_id AND h.due_at > now())
                 GROUP BY m.token_id ORDER BY min(m.id) LIMIT \(limit)
            ), held AS (
                UPDATE push_messages m SET due_at = now() + make_interval(secs => \(seconds))
                  FROM (SELECT id FROM push_messages
                         WHERE id IN (SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY token_id ORDER BY id) AS place
                                                        FROM push_messages WHERE token_id IN (SELECT token_id FROM due) AND due_at <= now()) c
                                       WHERE c.place <= \(perPhone))
                           AND due_at <= now()
                           FOR UPDATE SKIP LOCKED) t
                 WHERE m.id = t.id
                RETURNING m.*
            )
            SELECT s.token_id, s.endpoint, s.p256dh, s.auth, max(h.attempts) AS attempts,
                   array_agg(h.id ORDER BY h.id) AS ids, array_agg(h.kind ORDER BY h.id) AS kinds,
                   array_agg(h.task_id ORDER BY h.id) AS tasks, array_agg(h.generation ORDER BY h.id) AS generations,
                   array_agg(coalesce(floor(extract(epoch FROM t.updated_at) * 1000)::bigint, 0) ORDER BY h.id) AS changed
              FROM held h JOIN push_subscriptions s ON s.token_id = h.token_id LEFT JOIN tasks t ON t.id = h.task_id
             GROUP BY s.token_id
             ORDER BY min(h.id)
            """
        ).map { row in
            let r = row.makeRandomAccess()
            let ids = try r["ids"].decode([Int64].self)
            let kinds = try r["kinds"].decode([String].self)
            let tasks = try r["tasks"].decode([Int64].self)
            let generations = try r["generations"].decode([Int32].self)
            let changed = try r["changed"].decode([Int64].self)
            return DuePush(
                tokenID: try r["token_id"].decode(Int64.self), endpoint: try r["endpoint"].decode(String.self),
                p256dh: Array(try r["p256dh"].decode(ByteBuffer.self).readableBytesView),
                auth: Array(try r["auth"].decode(ByteBuffer.self).readableBytesView),
                attempts: Int(try r["attempts"].decode(Int32.self)),
                messages: ids.indices.map {
                    DuePush.Message(
                        id: ids[$0], kind: kinds[$0], taskID: tasks[$0], generation: generations[$0],
                        taskChangedAt: changed[$0] > 0 ? changed[$0] : nil)
                })
        }
    }

    /// Records what came of a phone's push (``PushOutcome``). A message whose news came again while
    /// it was sent (its generation moved on) stays, due at once.
    public func recordPush(_ push: DuePush, outcome: PushOutcome) async throws {
        let ids = push.messages.map(\.id)
        switch outcome {
        case .sent, .dropped:
            _ = try await rows(
                """
                WITH done AS (
                    DELETE FROM push_messages m USING unnest(\(ids)::bigint[], \(push.messages.map(\.generation))::integer[]) AS c (id, generation)
                     WHERE m.id = c.id AND m.generation = c.generation
                    RETURNING m.id
                )
                UPDATE push_messages SET due_at = now(), attempts = 0
                 WHERE id = ANY(\(ids)) AND id NOT IN (SELECT id FROM done)
                """)
        case .gone:
            // The subscription that was sent to: one the phone has kept since (a renewal) stays.
            _ = try await rows("DELETE FROM push_subscriptions WHERE token_id = \(push.tokenID) AND endpoint = \(push.endpoint)")
        case .retry(let delay, let reason):
            let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
            _ = try await rows(
                """
                UPDATE push_messages SET attempts = attempts + 1, last_error = \(String(reason.prefix(300))),
                       due_at = now() + make_interval(secs => \(seconds))
                 WHERE id = ANY(\(ids))
                """)
        }
    }

    /// Messages waiting to be pushed (for /health and /metrics).
    public func pendingPushes() async throws -> Int {
        Int(try await rows("SELECT count(*) FROM push_messages")[0].decode(Int64.self))
    }
}
