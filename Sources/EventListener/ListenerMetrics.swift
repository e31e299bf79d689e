import Foundation
import Prometheus

/// The listener's figures, in a Prometheus registry the service serves on /metrics.
public struct ListenerMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
    }

    private static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "teamwork", subsystem: "listener", metricName: metric, unitName: unit, helpText: help)
    }

    private static var applied: MetricNameDescriptor { name("changes_applied", "total", "Worker changes applied to the master") }
    private static var recorded: MetricNameDescriptor {
        name("changes_recorded", "total", "Worker changes taken into the master's ledger, applied or not")
    }
    private static var conflicts: MetricNameDescriptor { name("conflicts", "total", "Worker changes decided by a conflict rule, by rule") }
    private static var lagChanges: MetricNameDescriptor {
        name("lag", "changes", "Worker changes in a replica not yet applied to the master")
    }
    private static var lagSeconds: MetricNameDescriptor {
        name("lag", "seconds", "Age of the oldest worker change not yet applied, 0 when none")
    }
    private static var stalledReplicas: MetricNameDescriptor {
        name("stalled_replicas", "", "Replica files whose worker changes cannot be taken in now (damaged or locked)")
    }
    private static var errors: MetricNameDescriptor {
        name("errors", "total", "Listener errors by kind: unreadable or locked replicas, database failures")
    }
    private static var batches: MetricNameDescriptor {
        name("batch_duration", "seconds", "Time to apply one batch of worker changes to the master")
    }

    func recorded(_ outcomes: [FieldOutcomeCount]) {
        guard !outcomes.isEmpty else { return }
        registry.makeCounter(descriptor: Self.recorded).increment(by: Int64(outcomes.count))
        registry.makeCounter(descriptor: Self.applied).increment(by: Int64(outcomes.filter(\.applied).count))
        for outcome in outcomes {
            if let rule = outcome.conflict {
                registry.makeCounter(descriptor: Self.conflicts, labels: [("rule", rule)]).increment()
            }
        }
    }

    func lag(replica: String, waiting: Int, oldest: Date?) {
        registry.makeGauge(descriptor: Self.lagChanges, labels: [("replica", replica)]).set(Double(waiting))
        let seconds = oldest.map { max(0, Date().timeIntervalSince($0)) } ?? 0
        registry.makeGauge(descriptor: Self.lagSeconds, labels: [("replica", replica)]).set(seconds)
    }

    func stalled(_ count: Int) {
        registry.makeGauge(descriptor: Self.stalledReplicas).set(Double(count))
    }

    func error(_ kind: String) {
        registry.makeCounter(descriptor: Self.errors, labels: [("kind", kind)]).increment()
    }

    func batch(_ duration: Duration) {
        registry.makeDurationHistogram(
            descriptor: Self.batches,
            buckets: [
                .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
                .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5),
            ]
        ).record(duration)
    }
}

struct FieldOutcomeCount {
    var applied: Bool
    var conflict: String?
}
