import ArgumentParser
import BlobStore
import CentralStore
import Egress
import EventListener
import Foundation
import Hummingbird
import Logging
import Outbox
import Prometheus
import ReplicaGenerator
import ServiceLifecycle
import SyncServer
import TeamworkModel

/// `teamwork-service run`: the whole server side in one process.
struct RunAll: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the generator, the listener, the sync endpoint and recurring plans together until SIGTERM or SIGINT.",
        discussion: """
            The HTTP port serves the sync protocol, GET /health (503 when the generator or the listener has not \
            finished a pass within --stall-after seconds) and GET /metrics (Prometheus). Under systemd with \
            Type=notify it says READY=1 once both have finished a pass and feeds WatchdogSec= only while neither \
            is stalled, so systemd restarts a service whose loops stop. On SIGTERM or SIGINT each part finishes what \
            it has in hand and the process exits 0. PostgreSQL going away is survived: each part retries with backoff.
            """
    )
    @OptionGroup var options: ServiceOptions
    @OptionGroup var logging: LoggingOptions
    @OptionGroup var server: ServerOptions
    @Option(help: "Seconds between the generator's and the listener's sweeps.") var sweep: Double = 5
    @Option(help: "Seconds without a finished pass after which a part counts as stalled (default: 3 sweeps, at least 30).")
    var stallAfter: Double?
    @Option(
        help:
            "Seconds between passes that make recurring plans' occurrences up to their horizons (the manager's plan commands make them at once too)."
    )
    var planInterval: Double = 3_600
    @Flag(
        help:
            "Send webhooks to addresses on this machine or a private network too (or TEAMWORK_WEBHOOKS_ALLOW_PRIVATE=1; default: refused)."
    )
    var webhooksAllowPrivate = false
    @Option(
        name: .customLong("egress-allow"),
        help: ArgumentHelp(
            "An address or CIDR range on this machine or a private network that webhooks and texts may go to (repeatable; or TEAMWORK_EGRESS_ALLOW, comma-separated).",
            valueName: "cidr"))
    var egressAllow: [String] = []
    @Option(help: "Seconds before a failed webhook attempt's first retry; each next waits up to twice as long (full jitter).")
    var webhookRetry: Double = 2
    @Option(help: "Seconds a webhook's receiver has to answer (1 to 60); a delivery cut off by a crash goes again after 3 times this.")
    var webhookTimeout: Double = 10
    @OptionGroup var messages: MessageOptions

    func validate() throws {
        _ = try egressAllowed()
        if !(1...60).contains(webhookTimeout) { throw ValidationError("--webhook-timeout must be 1 to 60 seconds") }
        if !(0.01...600).contains(webhookRetry) { throw ValidationError("--webhook-retry must be 0.01 to 600 seconds") }
        if !(sweep > 0) { throw ValidationError("--sweep must be positive") }
        try messages.check()
        if let stallAfter, !(1...86_400).contains(stallAfter) { throw ValidationError("--stall-after must be 1 to 86400 seconds") }
        if !(1...86_400).contains(planInterval) { throw ValidationError("--plan-interval must be 1 to 86400 seconds") }
    }

    func run() async throws {
        logging.bootstrap()
        let logger = Logger(label: "teamwork.service")
        let registry = PrometheusCollectorRegistry()
        let interval = Duration.milliseconds(Int(sweep * 1000))
        let generator = try await options.generator(sweepInterval: interval)
        let listener = try EventListener(
            .init(
                databaseURL: generator.configuration.databaseURL, directory: generator.configuration.directory,
                sweepInterval: interval),
            metrics: ListenerMetrics(registry: registry)
        )
        // Plans pass every --plan-interval: stalled after two missed passes and a minute.
        let status = ServiceStatus(parts: ServiceStatus.Part.allCases, windows: [.plans: planInterval * 2 + 60])
        let feedPosition = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "teamwork", subsystem: "generator", metricName: "feed_position", unitName: "",
                helpText: "The master change-feed position every replica reflects"))
        let active = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "teamwork", subsystem: "generator", metricName: "active", unitName: "",
                helpText: "1 while this instance generates into its replica folder, 0 while another one does"))
        status.onGeneratorRole { active.set(Double($0 == .active ? 1 : 0)) }
        let window = stallAfter ?? max(30, sweep * 3)
        var configuration = SyncServer.Configuration(
            databaseURL: generator.configuration.databaseURL, replicasDirectory: generator.configuration.directory)
        try server.apply(to: &configuration)
        configuration.pushed = { listener.wake([$0]) }
        configuration.watchLooked = { status.passed(.watch) }
        configuration.metrics = { registry.emitToString() + status.progressMetrics() }
        let health: @Sendable () -> (Bool, [String: String]) = {
            var (healthy, details) = status.health(window: window)
            // Degraded, not down: a damaged or locked replica is a data problem a restart does not fix.
            let stalled = listener.stalledReplicas(for: max(sweep * 4, 5))
            if !stalled.isEmpty {
                details["listener"] = "degraded"
                details["stalled_replicas"] = stalled.joined(separator: ",")
                if healthy { details["status"] = "degraded" }
            }
            return (healthy, details)
        }
        configuration.health = health
        var services: [any Service] = [
            GeneratorService(
                generator: generator, roleChanged: { status.generatorRole($0) },
                leaseChecked: { status.passed(.lease) }
            ) { report in
                status.passed(.generator)
                feedPosition.set(Double(report.feedPosition))
                if report.entries > 0 {
                    generator.logger.info(
                        "replicated",
                        metadata: [
                            "changes": "\(report.entries)", "replicas": "\(report.replicaWrites)",
                            "feed_position": "\(report.feedPosition)",
                        ])
                }
            },
            ListenerService(listener: listener) { _ in status.passed(.listener) },
            PlanService(
                databaseURL: generator.configuration.databaseURL, logger: logger,
                interval: .milliseconds(Int(planInterval * 1000))
            ) { _ in status.passed(.plans) },
        ]
        // The outbox's webhooks, with their progress on /health and /metrics.
        var webhookSettings = WebhookService.Settings()
        webhookSettings.egress = EgressPolicy(
            allowPrivate: webhooksAllowPrivate || optionOrEnvironment(nil, "TEAMWORK_WEBHOOKS_ALLOW_PRIVATE") == "1",
            allowed: try egressAllowed())
        webhookSettings.retryBase = .milliseconds(Int(webhookRetry * 1000))
        webhookSettings.timeout = .milliseconds(Int(webhookTimeout * 1000))
        webhookSettings.stallWindow = .milliseconds(Int(window * 1000))
        // Connections out of the service (webhooks, texts, OSRM), now and at most: the egress budget's own count.
        func egressGauge(_ metric: String, _ help: String) -> Gauge {
            registry.makeGauge(
                descriptor: MetricNameDescriptor(
                    namespace: "teamwork", subsystem: "egress", metricName: metric, unitName: "", helpText: help))
        }
        let (egressOpen, egressMost) = (
            egressGauge("connections", "Connections out of the service open now (webhooks, texts, OSRM)"),
            egressGauge("connections_most", "The most connections out of the service open at once since it started")
        )
        let egressSeen: @Sendable () -> Void = {
            egressOpen.set(Double(EgressBudget.shared.open))
            egressMost.set(Double(EgressBudget.shared.most))
        }
        let webhookProgress = Self.senderProgress(
            registry, subsystem: "webhooks", sent: ("delivered", "Webhook deliveries the receiver took (2xx)"),
            failed: "Webhook attempts that failed (retried, or failed for good)",
            pending: "Webhook deliveries waiting to go, of subscriptions not paused"
        ) {
            status.passed(.webhooks)
            egressSeen()
        }
        services.append(
            WebhookService(
                databaseURL: generator.configuration.databaseURL, settings: webhookSettings,
                logger: Logger(label: "teamwork.webhooks"), progress: webhookProgress))
        // The customers' messages, with their progress on /health and /metrics.
        // Listening on every address: links name this machine (--public-url says how customers reach it).
        let linkHost = ["::", "0.0.0.0"].contains(server.host) ? "localhost" : server.host.contains(":") ? "[\(server.host)]" : server.host
        var messageSettings = try messages.settings(
            defaultURL: "\(server.tls == nil ? "http" : "https")://\(linkHost):\(server.port)",
            boardOrigin: configuration.board?.publicOrigin)
        messageSettings.egress = webhookSettings.egress
        messageSettings.stallWindow = webhookSettings.stallWindow
        configuration.company = messageSettings.company
        if messageSettings.smtp != nil || messageSettings.sms != nil, messages.linksFallBack(boardOrigin: configuration.board?.publicOrigin)
        {
            logger.warning(
                "customers' links point at this server's own address; set --public-url (or TEAMWORK_PUBLIC_URL) to how customers reach it",
                metadata: ["links": "\(messageSettings.publicURL)"])
        }
        let messageProgress = Self.senderProgress(
            registry, subsystem: "messages", sent: ("sent", "Customer messages sent (email and SMS)"),
            failed: "Customer message attempts that failed (retried, or failed for good)", pending: "Customer messages waiting to go"
        ) {
            status.passed(.messages)
            egressSeen()
        }
        services.append(
            MessageService(
                databaseURL: generator.configuration.databaseURL, settings: messageSettings, logger: Logger(label: "teamwork.messages"),
                progress: messageProgress))
        // The phones' push messages (Web Push), with their progress on /health and /metrics.
        var pushSettings = PushService.Settings()
        // A push's address comes from a phone, not from an operator: public addresses only, whatever the
        // webhooks may reach (a push service of the tests' own with TEAMWORK_PUSH_ALLOW_PRIVATE=1).
        let pushPrivate = optionOrEnvironment(nil, "TEAMWORK_PUSH_ALLOW_PRIVATE") == "1"
        pushSettings.egress = EgressPolicy(allowPrivate: pushPrivate)
        configuration.pushAllowsLoopback = pushPrivate
        pushSettings.stallWindow = webhookSettings.stallWindow
        pushSettings.retryBase = webhookSettings.retryBase
        pushSettings.contact = PushService.contact(publicURL: messageSettings.publicURL)
        let pushProgress = Self.senderProgress(
            registry, subsystem: "push", sent: ("sent", "Pushes the phones' push services took"),
            failed: "Push attempts that failed (retried, or dropped)", pending: "Push messages waiting to go"
        ) {
            status.passed(.pushes)
            egressSeen()
        }
        services.append(
            PushService(
                databaseURL: generator.configuration.databaseURL, settings: pushSettings, logger: Logger(label: "teamwork.push"),
                progress: pushProgress))
        // The endpoint's blob folder, kept to what attachments need.
        services.append(
            BlobSweep(
                databaseURL: generator.configuration.databaseURL,
                store: try configuration.openBlobStore(),
                logger: logger))
        if let keeper = LocalClusterKeeper.forLocalDefault(options, logger: logger) { services.append(keeper) }
        if let notifier = SystemdNotifier.fromEnvironment() {
            services.append(WatchdogService(notifier: notifier, logger: logger) { health().0 })
        }
        try await SyncServer.run(configuration, services: services, logger: Logger(label: "teamwork.sync"))
        logger.info("stopped")
    }

    /// The ranges `--egress-allow` (or TEAMWORK_EGRESS_ALLOW) lets webhooks and texts reach.
    func egressAllowed() throws -> [AddressRange] {
        let given =
            egressAllow.isEmpty
            ? (optionOrEnvironment(nil, "TEAMWORK_EGRESS_ALLOW") ?? "").split(separator: ",").map(String.init) : egressAllow
        return try given.map { text in
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            guard let range = AddressRange(trimmed) else {
                throw ValidationError("--egress-allow takes an IP address or a CIDR range such as 10.0.5.0/24, not \(trimmed)")
            }
            return range
        }
    }

    /// An outbox sender's progress on /metrics (what went, attempts that failed, what waits) and
    /// /health (`passed`, on every pass).
    static func senderProgress(
        _ registry: PrometheusCollectorRegistry, subsystem: String, sent: (name: String, help: String), failed: String, pending: String,
        passed: @escaping @Sendable () -> Void
    ) -> @Sendable (_ sent: Int, _ failed: Int, _ pending: Int) -> Void {
        func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(namespace: "teamwork", subsystem: subsystem, metricName: metric, unitName: unit, helpText: help)
        }
        let went = registry.makeCounter(descriptor: name(sent.name, "total", sent.help))
        let failures = registry.makeCounter(descriptor: name("failed_attempts", "total", failed))
        let waiting = registry.makeGauge(descriptor: name("pending", "", pending))
        return { sent, failed, pending in
            passed()
            if sent > 0 { went.increment(by: Int64(sent)) }
            if failed > 0 { failures.increment(by: Int64(failed)) }
            if pending >= 0 { waiting.set(Double(pending)) }
        }
    }
}
