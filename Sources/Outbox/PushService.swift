import CentralStore
import Egress
import Foundation
import Logging
import ServiceLifecycle
import TeamworkModel
import WebPush

/// Sends the phones' push messages (docs/phone.md, "Notifications"): each phone's waiting messages
/// as one push, encrypted for its subscription (RFC 8291) and signed with the service's VAPID key
/// (RFC 8292), through ``EgressClient`` (one deadline, a bounded answer, a vetted address), one push
/// in flight per phone and `concurrency` in all. A push service that answers 429 or 5xx, or does not
/// answer, is tried again with full-jitter backoff (`attempts` in all, no sooner than its
/// `Retry-After`); 404 or 410 ends the subscription (the browser dropped it); anything else drops
/// the messages, said in one log line. What a push says: which tasks and what happened to them,
/// never a word of the task (the phone shows its own copy).
public struct PushService: Service {
    public struct Settings: SenderConfiguration {
        /// Pushes in flight at once: half the egress budget's at most, so a push service that hangs
        /// leaves webhooks and texts their connections.
        public var sending = SenderSettings(
            concurrency: 4, timeout: .seconds(10), attempts: 8, retryBase: .seconds(2), retryMaximum: .seconds(900))
        /// Who sends (RFC 8292's `sub`): a `mailto:` or `https:` address push services may write to.
        public var contact = "mailto:dispatch@localhost"
        /// How long a push service keeps a message for a phone that is off (seconds): a day, as the master does.
        public var timeToLive = 86_400

        public init() {}
    }

    let databaseURL: DatabaseURL
    let settings: Settings
    let logger: Logger
    let progress: @Sendable (_ sent: Int, _ failed: Int, _ pending: Int) -> Void

    public init(
        databaseURL: DatabaseURL, settings: Settings = Settings(), logger: Logger,
        progress: @escaping @Sendable (_ sent: Int, _ failed: Int, _ pending: Int) -> Void = { _, _, _ in }
    ) {
        self.databaseURL = databaseURL
        self.settings = settings
        self.logger = logger
        self.progress = progress
    }

    public func run() async throws {
        await Self.sender(settings: settings, logger: logger).run(
            url: databaseURL, poll: settings.poll, stallWindow: settings.stallWindow, what: "push sending", logger: logger,
            progress: progress)
    }

    /// Who sends, for push services to write to: the service's public address when it is an https
    /// one (RFC 8292 takes an `https:` or `mailto:` URI), else a `mailto:` at its host.
    public static func contact(publicURL: String) -> String {
        guard let url = URL(string: publicURL), let host = url.host, !host.isEmpty else { return Settings().contact }
        return url.scheme?.lowercased() == "https" ? "https://\(host)" : "mailto:dispatch@\(host)"
    }

    /// A phone's push and the key to sign it with (read from the master with the first claim).
    struct Item: Sendable {
        var push: CentralStore.DuePush
        var key: WebPush.VAPIDKey
    }

    static func sender(settings: Settings, logger: Logger) -> OutboxSender<Item, CentralStore.PushOutcome> {
        let lease = settings.timeout * 3 + .seconds(5)
        let key = Locked<WebPush.VAPIDKey?>(nil)
        return OutboxSender(
            concurrency: settings.concurrency,
            claim: { store, limit in
                let due = try await store.claimDuePushes(limit: limit, perPhone: 50, lease: lease)
                guard !due.isEmpty else { return .init(ready: [], full: false) }
                let signing: WebPush.VAPIDKey
                if let known = key.value {
                    signing = known
                } else {
                    signing = try await vapidKey(store)
                    key.mutate { $0 = signing }
                }
                return .init(ready: due.map { Item(push: $0, key: signing) }, full: due.count >= limit)
            },
            send: { await Self.send($0.push, key: $0.key, settings: settings) },
            record: { store, item, outcome in
                switch outcome {
                case .sent: break
                case .retry(let delay, let reason):
                    logger.notice(
                        "push attempt failed", metadata: ["token": "\(item.push.tokenID)", "error": "\(reason)", "retry_in": "\(delay)"])
                case .gone(let reason):
                    logger.info("push subscription ended", metadata: ["token": "\(item.push.tokenID)", "reason": "\(reason)"])
                case .dropped(let reason):
                    logger.warning(
                        "push messages dropped",
                        metadata: ["token": "\(item.push.tokenID)", "messages": "\(item.push.messages.count)", "reason": "\(reason)"])
                }
                try await store.recordPush(item.push, outcome: outcome)
                return outcome == .sent
            },
            pending: { try await $0.pendingPushes() })
    }

    /// The service's VAPID key: the master's, made here if none is kept yet.
    static func vapidKey(_ store: any OutboxStore) async throws -> WebPush.VAPIDKey {
        let fresh = WebPush.VAPIDKey()
        let kept = try await store.pushKey(proposed: (Array(fresh.privateKey), Array(fresh.publicKey)))
        return try WebPush.VAPIDKey(privateKey: Data(kept.privateKey))
    }

    /// What a push says: `{"v":1,"news":[{"kind":"assigned","task":12,"at":1765100000000},…]}`:
    /// which task, what happened, and when the task last changed (the phone waits for its copy to
    /// be that recent before it shows the news).
    static func payload(_ push: CentralStore.DuePush) -> Data {
        let news = push.messages.map { message in
            #"{"kind":"\#(message.kind)","task":\#(message.taskID)"# + (message.taskChangedAt.map { #","at":\#($0)"# } ?? "") + "}"
        }.joined(separator: ",")
        return Data(#"{"v":1,"news":[\#(news)]}"#.utf8)
    }

    /// The most of a push service's answer read: its status (and `Retry-After`) is what counts.
    static let answerLimit = 4096

    static func send(_ push: CentralStore.DuePush, key: WebPush.VAPIDKey, settings: Settings) async -> CentralStore.PushOutcome {
        guard let url = URL(string: push.endpoint), let keys = WebPush.Keys(p256dh: Data(push.p256dh), auth: Data(push.auth)) else {
            return .gone(reason: "the subscription cannot be used")
        }
        let retry = { (reason: String, atLeast: Duration) -> CentralStore.PushOutcome in
            guard push.attempts + 1 < settings.attempts else {
                return .dropped(reason: "\(settings.attempts) attempts failed; the last: \(reason)")
            }
            var backoff = Backoff(initial: settings.retryBase, maximum: settings.retryMaximum, jitter: .full)
            var delay = Duration.zero
            for _ in 0...push.attempts { delay = backoff.next() }
            return .retry(after: max(delay, atLeast), reason: reason)
        }
        let request: EgressClient.Request
        do {
            let urgent = push.messages.contains { ["assigned", "refused", "taken"].contains($0.kind) }
            request = EgressClient.Request(
                method: .POST, url: url,
                headers: [
                    ("Authorization", try key.authorization(endpoint: url, subject: settings.contact, expires: Date() + 12 * 3600)),
                    ("Content-Encoding", "aes128gcm"), ("Content-Type", "application/octet-stream"),
                    ("TTL", String(settings.timeToLive)), ("Urgency", urgent ? "high" : "normal"), ("User-Agent", "Teamwork-Push/1"),
                ],
                body: try WebPush.encrypt(payload(push), for: keys))
        } catch {
            return .dropped(reason: "\(error)")
        }
        do {
            let answer = try await EgressClient.send(request, policy: settings.egress, timeout: settings.timeout, bodyLimit: answerLimit)
            switch answer.status {
            case 200..<300: return .sent
            case 404, 410: return .gone(reason: "HTTP \(answer.status)")
            case 429, 500..<600:
                let after = answer.headers.first { $0.0.lowercased() == "retry-after" }.flatMap {
                    Int($0.1.trimmingCharacters(in: .whitespaces))
                }
                return retry("HTTP \(answer.status)", .seconds(min(after ?? 0, 3600)))
            default: return .dropped(reason: "HTTP \(answer.status)")
            }
        } catch let failure as EgressFailure {
            return failure.final ? .gone(reason: failure.description) : retry(failure.description, .zero)
        } catch {
            return retry("no answer", .zero)
        }
    }
}
