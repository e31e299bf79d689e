import Foundation
import PostgresNIO
import TeamworkModel

extension CentralStore {
    static let subscriptionColumns =
        """
        s.id, s.url, s.events, s.description, s.secret_fingerprint, s.previous_until, s.failures, s.paused_at, s.paused_reason,
        s.created_at, s.rotated_at, s.rotated_by
        """
    static let deliveryColumns = """
        d.id, d.event_id, d.subscription_id, e.event, e.task_id, d.state, d.attempts, d.next_attempt_at, d.last_status,
        d.last_error, d.delivered_at, e.created_at
        """

    static func subscription(_ row: PostgresRow) throws -> WebhookSubscription {
        let r = row.makeRandomAccess()
        return WebhookSubscription(
            id: try r["id"].decode(Int64.self), url: try r["url"].decode(String.self),
            events: try r["events"].decode([String].self).compactMap(WebhookEvent.init(rawValue:)),
            description: try r["description"].decode(String.self),
            secretFingerprint: try r["secret_fingerprint"].decode(String.self), previousUntil: try r["previous_until"].decode(Date?.self),
            failures: Int(try r["failures"].decode(Int32.self)), pausedAt: try r["paused_at"].decode(Date?.self),
            pausedReason: try r["paused_reason"].decode(String?.self), createdAt: try r["created_at"].decode(Date.self),
            rotatedAt: try r["rotated_at"].decode(Date?.self), rotatedBy: try r["rotated_by"].decode(Int64?.self))
    }

    static func delivery(_ row: PostgresRow) throws -> WebhookDelivery {
        let r = row.makeRandomAccess()
        return WebhookDelivery(
            id: try r["id"].decode(Int64.self), eventID: try r["event_id"].decode(Int64.self),
            subscriptionID: try r["subscription_id"].decode(Int64.self), event: try r["event"].decode(String.self),
            taskID: try r["task_id"].decode(Int64?.self),
            state: WebhookDelivery.State(rawValue: try r["state"].decode(String.self)) ?? .pending,
            attempts: Int(try r["attempts"].decode(Int32.self)), nextAttemptAt: try r["next_attempt_at"].decode(Date.self),
            lastStatus: try r["last_status"].decode(Int32?.self).map(Int.init), lastError: try r["last_error"].decode(String?.self),
            deliveredAt: try r["delivered_at"].decode(Date?.self), createdAt: try r["created_at"].decode(Date.self))
    }

    /// Subscribes `url` to `events`; the secret is returned here and never again.
    public func addWebhook(url: String, events: [WebhookEvent], description: String) async throws -> (WebhookSubscription, String) {
        _ = try WebhookSubscription.validURL(url)
        guard !events.isEmpty else { throw TeamworkError.invalid("a webhook hears of at least one event (--event)") }
        guard description.count <= 200 else { throw TeamworkError.invalid("a webhook's description has at most 200 characters") }
        guard try await rows("SELECT count(*) FROM webhook_subscriptions")[0].decode(Int64.self) < 100 else {
            throw TeamworkError.conflict("there are 100 webhooks already: remove one first")
        }
        let names = Array(Set(events.map(\.rawValue))).sorted()
        // The secret is made inside the database, returned this once, and read again only by the service.
        let (id, secret) = try await transaction { connection in
            let made = try await connection.query(
                "SELECT id, secret FROM teamwork_webhook_add(\(url), \(names), \(description))", logger: logger
            ).collect()[0].makeRandomAccess()
            return (try made["id"].decode(Int64.self), try made["secret"].decode(String.self))
        }
        return (try await webhook(id: id), secret)
    }

    public func webhooks() async throws -> [WebhookSubscription] {
        try await rows("SELECT \(unescaped: Self.subscriptionColumns) FROM webhook_subscriptions s ORDER BY s.id").map(Self.subscription)
    }

    public func webhook(id: Int64) async throws -> WebhookSubscription {
        guard
            let row = try await rows("SELECT \(unescaped: Self.subscriptionColumns) FROM webhook_subscriptions s WHERE s.id = \(id)").first
        else { throw TeamworkError.notFound("no webhook with id \(id)") }
        return try Self.subscription(row)
    }

    /// A new secret for `id`, returned once; the old one is still signed with, beside it, for `overlap`.
    public func rotateWebhookSecret(id: Int64, overlap: Duration = .seconds(86_400)) async throws -> String {
        let seconds = Double(overlap.components.seconds)
        let secret = try await transaction { connection in
            try await connection.query(
                "SELECT teamwork_webhook_rotate(\(id), make_interval(secs => \(seconds))) AS secret", logger: logger
            ).collect()[0].makeRandomAccess()["secret"].decode(String?.self)
        }
        guard let secret else { throw TeamworkError.notFound("no webhook with id \(id)") }
        return secret
    }

    /// Pauses (with `reason`) or resumes (nil) a webhook; resuming sends what waited, from the oldest.
    public func pauseWebhook(id: Int64, reason: String?) async throws -> WebhookSubscription {
        let rows = try await transaction { connection in
            try await connection.query(
                """
                UPDATE webhook_subscriptions AS s SET paused_at = CASE WHEN \(reason)::text IS NULL THEN NULL ELSE now() END,
                       paused_reason = \(reason)::text, failures = CASE WHEN \(reason)::text IS NULL THEN 0 ELSE failures END
                WHERE s.id = \(id) RETURNING \(unescaped: Self.subscriptionColumns)
                """, logger: logger
            ).collect()
        }
        guard let row = rows.first else { throw TeamworkError.notFound("no webhook with id \(id)") }
        return try Self.subscription(row)
    }

    public func removeWebhook(id: Int64) async throws {
        let rows = try await transaction { connection in
            try await connection.query("DELETE FROM webhook_subscriptions WHERE id = \(id) RETURNING id", logger: logger).collect()
        }
        guard !rows.isEmpty else { throw TeamworkError.notFound("no webhook with id \(id)") }
    }

    /// A webhook's deliveries, newest first.
    public func webhookDeliveries(subscriptionID: Int64, limit: Int = 50, failedOnly: Bool = false) async throws -> [WebhookDelivery] {
        _ = try await webhook(id: subscriptionID)
        return try await rows(
            """
            SELECT \(unescaped: Self.deliveryColumns) FROM webhook_deliveries d JOIN outbox_events e ON e.id = d.event_id
            WHERE d.subscription_id = \(subscriptionID) AND (NOT \(failedOnly) OR d.state = 'failed')
            ORDER BY d.id DESC LIMIT \(min(max(limit, 1), 1000))
            """
        ).map(Self.delivery)
    }

    /// Sends a delivery again, as soon as it can go (its id stays: a receiver that has it drops it).
    public func replayDelivery(id: Int64) async throws -> WebhookDelivery {
        let rows = try await transaction { connection in
            try await connection.query(
                """
                WITH d AS (
                    UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = now(), last_error = NULL
                    WHERE id = \(id) RETURNING *
                )
                SELECT \(unescaped: Self.deliveryColumns) FROM d JOIN outbox_events e ON e.id = d.event_id
                """, logger: logger
            ).collect()
        }
        guard let row = rows.first else { throw TeamworkError.notFound("no delivery with id \(id)") }
        return try Self.delivery(row)
    }

    /// What the delivering service sends: one due delivery of an unpaused subscription.
    public struct DueDelivery: Sendable {
        public var id: Int64
        public var eventID: Int64
        public var subscriptionID: Int64
        public var url: String
        public var payload: String
        public var attempts: Int
        /// The secrets to sign with: the current one, and the one before while it overlaps.
        public var secrets: [String]
    }

    /// Takes up to `limit` due deliveries, the oldest first and at most one per subscription
    /// (each subscription's events go in order), and holds them for `lease`: another instance
    /// leaves them alone meanwhile (also one claiming at the same moment), and should this one die
    /// mid-send they are due again after it.
    public func claimDueDeliveries(limit: Int, lease: Duration) async throws -> [DueDelivery] {
        let seconds = Double(lease.components.seconds)
        // One statement through ``rows(_:)``: within the store's query deadline, so a master that goes away
        // mid-statement ends it with an error instead of holding the sender (and its shutdown) for good.
        return try await rows(
            """
            WITH due AS (
                SELECT DISTINCT ON (d.subscription_id) d.id
                  FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
                 WHERE d.state = 'pending' AND d.next_attempt_at <= now() AND s.paused_at IS NULL
                   AND NOT EXISTS (SELECT 1 FROM webhook_deliveries o
                                    WHERE o.subscription_id = d.subscription_id AND o.state = 'pending' AND o.id < d.id
                                      AND o.next_attempt_at > now())
                 ORDER BY d.subscription_id, d.id
                 LIMIT \(limit)
            ), held AS (
                -- The lock re-checks what makes a delivery due on the row as it is now: another host that
                -- claimed it since this statement began (and committed) has moved it on, and it is left
                -- alone (checking only "id IN due", two hosts sent the same delivery: seen 7 in 300).
                UPDATE webhook_deliveries d SET next_attempt_at = now() + make_interval(secs => \(seconds))
                  FROM (SELECT id FROM webhook_deliveries
                         WHERE id IN (SELECT id FROM due) AND state = 'pending' AND next_attempt_at <= now()
                           FOR UPDATE SKIP LOCKED) t
                 WHERE d.id = t.id
                RETURNING d.*
            )
            SELECT h.id, h.event_id, h.subscription_id, h.attempts, s.url, e.payload::text AS payload, s.secret,
                   CASE WHEN s.previous_until > now() THEN s.previous_secret END AS previous_secret
              FROM held h JOIN webhook_subscriptions s ON s.id = h.subscription_id JOIN outbox_events e ON e.id = h.event_id
             ORDER BY h.id
            """
        ).map { row in
            let r = row.makeRandomAccess()
            return DueDelivery(
                id: try r["id"].decode(Int64.self), eventID: try r["event_id"].decode(Int64.self),
                subscriptionID: try r["subscription_id"].decode(Int64.self), url: try r["url"].decode(String.self),
                payload: try r["payload"].decode(String.self), attempts: Int(try r["attempts"].decode(Int32.self)),
                secrets: [try r["secret"].decode(String.self)] + [try r["previous_secret"].decode(String?.self)].compactMap { $0 })
        }
    }

    /// Records an attempt: delivered (a 2xx), or failed with `retryIn` (nil: for good). A
    /// subscription whose attempts have failed `pauseAfter` times in a row is paused, with the last reason.
    public func recordAttempt(
        deliveryID: Int64, status: Int?, error: String?, delivered: Bool, retryIn: Duration?, pauseAfter: Int
    ) async throws {
        let retry = retryIn.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
        let reason = String((error ?? status.map { "HTTP \($0)" } ?? "no answer").prefix(300))
        // One statement through ``rows(_:)``, within the store's query deadline (see ``claimDueDeliveries``).
        _ = try await rows(
            """
            WITH d AS (
                UPDATE webhook_deliveries SET attempts = attempts + 1, last_status = \(status.map { Int32($0) }),
                       last_error = CASE WHEN \(delivered) THEN NULL ELSE \(reason) END,
                       state = CASE WHEN \(delivered) THEN 'delivered' WHEN \(retry)::double precision IS NULL THEN 'failed' ELSE 'pending' END,
                       delivered_at = CASE WHEN \(delivered) THEN now() END,
                       next_attempt_at = now() + make_interval(secs => coalesce(\(retry)::double precision, 0))
                WHERE id = \(deliveryID) AND state = 'pending' RETURNING subscription_id
            )
            UPDATE webhook_subscriptions s SET
                failures = CASE WHEN \(delivered) THEN 0 ELSE s.failures + 1 END,
                paused_at = CASE WHEN NOT \(delivered) AND s.failures + 1 >= \(pauseAfter) AND s.paused_at IS NULL THEN now()
                                 ELSE s.paused_at END,
                paused_reason = CASE WHEN NOT \(delivered) AND s.failures + 1 >= \(pauseAfter) AND s.paused_at IS NULL
                                     THEN \(pauseAfter) || ' attempts in a row failed; the last: ' || \(reason)
                                     ELSE s.paused_reason END
            FROM d WHERE s.id = d.subscription_id
            RETURNING s.id
            """)
    }

    /// Deliveries waiting to go, of unpaused subscriptions (for /health and /metrics).
    public func pendingDeliveries() async throws -> Int {
        Int(
            try await rows(
                """
                SELECT count(*) FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
                WHERE d.state = 'pending' AND s.paused_at IS NULL
                """)[0].decode(Int64.self))
    }
}
