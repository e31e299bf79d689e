import CentralStore
import Crypto
import Foundation
import HTTPFetch
import Logging
import ServiceLifecycle
import TeamworkModel

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

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

/// Whether an address may be a webhook's destination: one that resolves to a loopback, private,
/// link-local or otherwise internal address is refused unless the operator allows them (a webhook
/// must not become a way into the service's own network).
public enum WebhookDestination {
    /// Why `host` may not be sent to, or nil when it may.
    public static func refusal(host: String) -> String? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &found) == 0, let first = found else { return "its host does not resolve" }
        defer { freeaddrinfo(first) }
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let info = next {
            if let address = info.pointee.ai_addr, isInternal(address) {
                return "its host resolves to a private or loopback address"
            }
            next = info.pointee.ai_next
        }
        return nil
    }

    static func isInternal(_ address: UnsafeMutablePointer<sockaddr>) -> Bool {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            let ip = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt32(bigEndian: $0.pointee.sin_addr.s_addr) }
            return internalIPv4(ip)
        case AF_INET6:
            let bytes = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
            }
            if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
                return internalIPv4(UInt32(bytes[12]) << 24 | UInt32(bytes[13]) << 16 | UInt32(bytes[14]) << 8 | UInt32(bytes[15]))
            }
            if bytes[0..<15].allSatisfy({ $0 == 0 }) { return true }  // :: and ::1
            if bytes[0] & 0xfe == 0xfc { return true }  // fc00::/7, unique local
            if bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80 { return true }  // fe80::/10, link-local
            return false
        default:
            return true
        }
    }

    static func internalIPv4(_ ip: UInt32) -> Bool {
        let ranges: [(UInt32, UInt32)] = [
            (0x0000_0000, 8), (0x0A00_0000, 8), (0x6440_0000, 10), (0x7F00_0000, 8), (0xA9FE_0000, 16), (0xAC10_0000, 12),
            (0xC000_0000, 24), (0xC0A8_0000, 16), (0xC612_0000, 15), (0xE000_0000, 3),
        ]
        return ranges.contains { base, bits in ip >> (32 - bits) == base >> (32 - bits) }
    }
}

/// Sends the outbox's webhook deliveries (docs/integrations.md): at least once, each subscription's
/// events in order, one at a time per subscription and `concurrency` in all, each attempt within
/// `timeout`, retried with full-jitter backoff (`retryBase` doubling up to `retryMaximum`, `attempts`
/// in all), a subscription paused after `pauseAfter` failed attempts in a row. Each delivery is held
/// while it is sent; should the service die mid-send, it goes again once the hold ends, with the same
/// `webhook-id`, for the receiver to drop as a repeat.
public struct WebhookService: Service {
    public struct Settings: Sendable {
        public var concurrency = 8
        public var timeout: Duration = .seconds(10)
        public var attempts = 10
        public var retryBase: Duration = .seconds(2)
        public var retryMaximum: Duration = .seconds(1800)
        public var pauseAfter = 50
        public var allowPrivate = false
        /// How often the outbox is looked at when nothing is due.
        public var poll: Duration = .milliseconds(500)

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
        let (url, settings, logger, progress) = (databaseURL, settings, logger, progress)
        await OutboxPasses.run(url: url, poll: settings.poll, what: "webhook delivery", logger: logger) { store in
            let (sent, waiting) = try await Self.pass(store, settings: settings, logger: logger)
            progress(sent.delivered, sent.failed, waiting ?? -1)
            return sent.delivered + sent.failed > 0
        }
    }

    /// Sends what is due now (at most `concurrency`) and records each attempt; how many went and
    /// failed, and (when nothing was due) how many wait.
    static func pass(
        _ store: CentralStore, settings: Settings, logger: Logger
    ) async throws -> ((delivered: Int, failed: Int), Int?) {
        let lease = settings.timeout * 3 + .seconds(5)
        let due = try await store.claimDueDeliveries(limit: settings.concurrency, lease: lease)
        guard !due.isEmpty else { return ((0, 0), try await store.pendingDeliveries()) }
        let outcomes = await withTaskGroup(of: (CentralStore.DueDelivery, Outcome).self) { group in
            for delivery in due { group.addTask { (delivery, await Self.send(delivery, settings: settings)) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        var (delivered, failed) = (0, 0)
        for (delivery, outcome) in outcomes {
            var retryIn: Duration?
            if !outcome.delivered, delivery.attempts + 1 < settings.attempts, !outcome.final {
                var backoff = Backoff(initial: settings.retryBase, maximum: settings.retryMaximum, jitter: .full)
                for _ in 0...delivery.attempts { retryIn = backoff.next() }
            }
            if outcome.delivered { delivered += 1 } else { failed += 1 }
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
        }
        return ((delivered, failed), nil)
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
            timeout: settings.timeout, allowPrivate: settings.allowPrivate)
    }

    /// POSTs `body` to `address` signed per Standard Webhooks with `secrets`, within `timeout`;
    /// an address that resolves to a private or loopback one is refused unless `allowPrivate`.
    static func post(
        _ body: Data, to address: String, id: String, secrets: [String], timeout: Duration, allowPrivate: Bool
    ) async -> Outcome {
        guard let url = URL(string: address), let host = url.host else {
            return Outcome(delivered: false, error: "not an address", final: true)
        }
        if !allowPrivate, let refusal = WebhookDestination.refusal(host: host) {
            return Outcome(delivered: false, error: "refused: \(refusal)", final: true)
        }
        let timestamp = Int(Date().timeIntervalSince1970)
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = body
        request.timeoutInterval = Double(timeout.components.seconds) + 1
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Teamwork-Webhooks/1", forHTTPHeaderField: "User-Agent")
        request.setValue(id, forHTTPHeaderField: "webhook-id")
        request.setValue(String(timestamp), forHTTPHeaderField: "webhook-timestamp")
        request.setValue(
            WebhookSignature.sign(id: id, timestamp: timestamp, body: body, secrets: secrets),
            forHTTPHeaderField: "webhook-signature")
        do {
            let limit = timeout
            let (_, response) = try await withDeadline(limit, timeout: { URLError(.timedOut) }) { [request] in
                try await HTTPFetch.data(for: request)
            }
            let status = (response as? HTTPURLResponse)?.statusCode
            return Outcome(delivered: status.map { (200..<300).contains($0) } ?? false, status: status)
        } catch {
            return Outcome(delivered: false, error: (error as? URLError).map { "no answer (\($0.code.rawValue))" } ?? "no answer")
        }
    }
}

/// How the outbox's senders (webhooks, customers' messages) run: a pass at a time on one
/// connection of the sender's own, each statement within a query deadline, again at once while a
/// pass had work and after `poll` when it had none. A pass that fails (the master away: the
/// deadline ends a statement on a dead connection) drops the connection, is said in one log line
/// and retried with backoff on a new one; all of it ends at shutdown. (A connection per pass, as
/// before, forked a backend twice a second per sender: the flood tests saw them as extra connections.)
enum OutboxPasses {
    static func run(
        url: DatabaseURL, poll: Duration, what: String, logger: Logger,
        pass: @escaping @Sendable (CentralStore) async throws -> Bool
    ) async {
        await cancelWhenGracefulShutdown {
            await Retrying(Backoff(initial: .milliseconds(200), maximum: .seconds(5))).forever(failed: { ending, delay in
                if case .failed(let error) = ending {
                    logger.error("\(what) failed; retrying", metadata: ["error": "\(error)", "retry_in": "\(delay)"])
                }
            }) { made in
                try await CentralStore.withStore(url, queryDeadline: .seconds(10), logger: logger) { store in
                    while !Task.isCancelled {
                        let busy = try await pass(store)
                        made.made()
                        if !busy { try await Task.sleep(for: poll) }
                    }
                }
            }
        }
    }
}
