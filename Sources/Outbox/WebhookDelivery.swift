import CentralStore
import Crypto
import Egress
import Foundation
import Logging
import ServiceLifecycle
import TeamworkModel

/// Standard Webhooks' signature (https://www.standardwebhooks.com): `v1,` and the base64 of
/// HMAC-SHA256 over `id.timestamp.body`, keyed with the secret's bytes (after `whsec_`). Several
/// signatures (a rotated secret's overlap) go in one header, separated by spaces.
public enum WebhookSignature {
    public static func sign(id: String, timestamp: Int, body: Data, secrets: [String]) -> String {
        secrets.compactMap { secret -> String? in
            guard let key = Data(base64Encoded: String(secret.dropFirst(secret.hasPrefix("whsec_") ? 6 : 0))) else { return nil }
            var message = Data("\(id).\(timestamp).".utf8)
            message.append(body)
            let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key))
            return "v1," + Data(mac).base64EncodedString()
        }.joined(separator: " ")
    }
}

/// Whether an address may be a webhook's destination under `policy` (``EgressPolicy``): its host
/// resolved once and every address vetted. The same rule runs again at each delivery, on the address
/// the delivery then connects to.
public enum WebhookDestination {
    /// Why `host` may not be sent to, or nil when it may.
    public static func refusal(host: String, policy: EgressPolicy = EgressPolicy()) async -> String? {
        do {
            _ = try await EgressClient.vettedAddress(host, policy: policy)
            return nil
        } catch let failure as EgressFailure {
            return failure.refusal ?? failure.description
        } catch {
            return "\(error)"
        }
    }
}

/// Sends the outbox's webhook deliveries (docs/integrations.md): at least once, each subscription's
/// events in order, one at a time per subscription and `concurrency` in all, each attempt within
/// `timeout`, retried with full-jitter backoff (`retryBase` doubling up to `retryMaximum`, `attempts`
/// in all), a subscription paused after `pauseAfter` failed attempts in a row. Each delivery is held
/// while it is sent; should the service die mid-send, it goes again once the hold ends, with the same
/// `webhook-id`, for the receiver to drop as a repeat.
public struct WebhookService: Service {
    public struct Settings: SenderConfiguration {
        public var sending = SenderSettings(
            concurrency: 8, timeout: .seconds(10), attempts: 10, retryBase: .seconds(2), retryMaximum: .seconds(1800))
        public var pauseAfter = 50

        public init() {}
    }

    let databaseURL: DatabaseURL
    let settings: Settings
    let logger: Logger
    let progress: @Sendable (_ delivered: Int, _ failed: Int, _ pending: Int) -> Void

    public init(
        databaseURL: DatabaseURL, settings: Settings = Settings(), logger: Logger,
        progress: @escaping @Sendable (_ delivered: Int, _ failed: Int, _ pending: Int) -> Void = { _, _, _ in }
    ) {
        self.databaseURL = databaseURL
        self.settings = settings
        self.logger = logger
        self.progress = progress
    }

    public func run() async throws {
        await Self.sender(settings: settings, logger: logger).run(
            url: databaseURL, poll: settings.poll,
            stallWindow: settings.stallWindow, what: "webhook delivery", logger: logger, progress: progress)
    }

    /// The outbox's deliveries as an ``OutboxSender``: at most one in flight per subscription (the
    /// claim skips a subscription whose earlier delivery is held), `concurrency` in all, each
    /// attempt recorded as soon as it is known.
    static func sender(settings: Settings, logger: Logger) -> OutboxSender<CentralStore.DueDelivery, Outcome> {
        let lease = settings.timeout * 3 + .seconds(5)
        return OutboxSender(
            concurrency: settings.concurrency,
            claim: { store, limit in
                let due = try await store.claimDueDeliveries(limit: limit, lease: lease)
                return .init(ready: due, full: due.count >= limit)
            },
            send: { await Self.send($0, settings: settings) },
            record: { store, delivery, outcome in
                var retryIn: Duration?
                if !outcome.delivered, delivery.attempts + 1 < settings.attempts, !outcome.final {
                    var backoff = Backoff(initial: settings.retryBase, maximum: settings.retryMaximum, jitter: .full)
                    for _ in 0...delivery.attempts { retryIn = backoff.next() }
                }
                if !outcome.delivered {
                    logger.notice(
                        "webhook attempt failed",
                        metadata: [
                            "delivery": "\(delivery.id)", "subscription": "\(delivery.subscriptionID)",
                            "error": "\(outcome.error ?? outcome.status.map { "HTTP \($0)" } ?? "")",
                            "retry_in": "\(retryIn.map { "\($0)" } ?? "no more")",
                        ])
                }
                try await store.recordAttempt(
                    deliveryID: delivery.id, status: outcome.status, error: outcome.error, delivered: outcome.delivered,
                    retryIn: outcome.delivered ? nil : retryIn, pauseAfter: settings.pauseAfter)
                return outcome.delivered
            },
            pending: { try await $0.pendingDeliveries() })
    }

    struct Outcome: Sendable {
        var delivered: Bool
        var status: Int?
        var error: String?
        /// No retry helps (the destination is refused).
        var final = false
    }

    static func send(_ delivery: CentralStore.DueDelivery, settings: Settings) async -> Outcome {
        await post(
            Data(delivery.payload.utf8), to: delivery.url, id: WebhookDelivery.messageID(delivery.eventID), secrets: delivery.secrets,
            timeout: settings.timeout, egress: settings.egress)
    }

    /// The most of a receiver's answer read: its status is what counts.
    static let answerLimit = 4096

    /// POSTs `body` to `address` signed per Standard Webhooks with `secrets`, within `timeout`, through
    /// ``EgressClient`` (an address the policy refuses is final: no retry helps).
    static func post(
        _ body: Data, to address: String, id: String, secrets: [String], timeout: Duration, egress: EgressPolicy
    ) async -> Outcome {
        guard let url = URL(string: address) else { return Outcome(delivered: false, error: "not an address", final: true) }
        let timestamp = Int(Date().timeIntervalSince1970)
        let request = EgressClient.Request(
            method: .POST, url: url,
            headers: [
                ("Content-Type", "application/json"), ("User-Agent", "Teamwork-Webhooks/1"), ("webhook-id", id),
                ("webhook-timestamp", String(timestamp)),
                ("webhook-signature", WebhookSignature.sign(id: id, timestamp: timestamp, body: body, secrets: secrets)),
            ], body: body)
        do {
            let answer = try await EgressClient.send(request, policy: egress, timeout: timeout, bodyLimit: answerLimit)
            return Outcome(delivered: (200..<300).contains(answer.status), status: answer.status)
        } catch let failure as EgressFailure {
            return Outcome(delivered: false, error: failure.description, final: failure.final)
        } catch {
            return Outcome(delivered: false, error: "no answer")
        }
    }
}
