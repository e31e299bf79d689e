import Foundation
import ReplicaGenerator
import TeamworkModel

/// What `/health` and `/metrics` report of the loops a process runs: when
/// each last finished a pass, and whether this instance's generator is the
/// active one. A loop that is alive but no longer doing its job shows here.
final class ServiceStatus: Sendable {
    /// The long-running loops, each reporting its passes.
    enum Part: String, CaseIterable, Sendable {
        /// The generator's catch-up passes (only while this instance is the active one).
        case generator
        /// The generator's leadership lease: each look at the folder's lock.
        case lease
        /// The event listener's passes over the replicas.
        case listener
        /// The live-mode watch's looks at the files devices wait on.
        case watch
        /// Recurring plans' passes (hourly, and when a plan changes).
        case plans
        /// The outbox's webhook deliveries: each look at what is due.
        case webhooks
        /// The customers' messages: each look at what is due.
        case messages
        /// The phones' push messages: each look at what is due.
        case pushes
    }

    private struct State {
        var passes: [Part: Date] = [:]
        var generatorRole: GeneratorRole?
        var roleObservers: [@Sendable (GeneratorRole) -> Void] = []
    }

    private let state = Locked(State())
    private let started = Date()
    /// The parts this process runs.
    let parts: [Part]
    /// A part's own stall window where it passes less often than the others (plans: hourly).
    let windows: [Part: TimeInterval]

    init(parts: [Part], windows: [Part: TimeInterval] = [:]) {
        self.parts = parts
        self.windows = windows
    }

    func passed(_ part: Part) {
        state.mutate { $0.passes[part] = Date() }
    }

    /// The parts checked now: the generator's passes count only while it is active.
    private func checked(_ current: State) -> [Part] {
        parts.filter { $0 != .generator || current.generatorRole != .standby }
    }

    /// `teamwork_<part>_seconds_since_progress` for each part running: seconds
    /// since it last finished a pass (since the start, before its first). An
    /// alert on it catches a loop that is alive but no longer doing its job.
    func progressMetrics() -> String {
        let now = Date()
        let current = state.value
        return checked(current).map { part in
            let name = part.rawValue
            return """
                # HELP teamwork_\(name)_seconds_since_progress Seconds since the \(name) last finished a pass
                # TYPE teamwork_\(name)_seconds_since_progress gauge
                teamwork_\(name)_seconds_since_progress \(Int(now.timeIntervalSince(current.passes[part] ?? started)))

                """
        }.joined()
    }

    func generatorRole(_ role: GeneratorRole) {
        let observers = state.mutate { state in
            state.generatorRole = role
            return state.roleObservers
        }
        observers.forEach { $0(role) }
    }

    func onGeneratorRole(_ observer: @escaping @Sendable (GeneratorRole) -> Void) {
        state.mutate { $0.roleObservers.append(observer) }
    }

    /// Healthy when each part running finished a pass within `window`; a
    /// generator standing by for another instance is healthy while its lease looks go on.
    func health(window: TimeInterval) -> (healthy: Bool, details: [String: String]) {
        let now = Date()
        let current = state.value
        var details: [String: String] = [:]
        var healthy = true
        for part in checked(current) {
            let last = current.passes[part]
            details["\(part.rawValue)_last_pass"] = last?.formatted(.iso8601) ?? "never"
            let fresh = last.map { now.timeIntervalSince($0) <= windows[part] ?? window } ?? false
            details[part.rawValue] = fresh ? "ok" : "stalled"
            healthy = healthy && fresh
        }
        if parts.contains(.generator) {
            if current.generatorRole == .standby { details["generator"] = "standby" }
            details["generator_role"] = current.generatorRole?.rawValue ?? "starting"
        }
        return (healthy, details)
    }
}
