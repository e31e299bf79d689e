import CentralStore
import Foundation
import Logging
import ServiceLifecycle
import TeamworkModel

/// Who a token belongs to and which teams they are in, remembered between
/// requests so that a pull does not cost two PostgreSQL round trips before it
/// touches its replica.
///
/// PostgreSQL says when to forget: `teamwork_access_changed()` notifies
/// `teamwork_access` when a token is revoked, a membership changes, or a person
/// or team is renamed or removed, and everything is forgotten at once (a
/// revoked token or a removed member is refused from the next request on,
/// within milliseconds). The cache is used only while that LISTEN is
/// registered: when its connection is lost, every request goes to the master
/// until it is back. Entries also expire within ``timeToLive`` (each at a
/// random point of its second half, so a fleet's entries spread out), and an answer
/// fetched while a notification arrived is not kept (a generation counter),
/// so a revocation racing a lookup is never remembered wrongly.
final class AccessCache: Service, Sendable {
    /// What a token gives: the person and their teams, by the master.
    struct Access: Sendable {
        var person: Person
        var teams: [Team]
    }

    private struct Entry {
        var access: Access
        var expires: ContinuousClock.Instant
    }

    private struct State {
        var entries: [String: Entry] = [:]
        /// The last answer the master gave for each token, kept through a lost LISTEN (not
        /// through a notification): what a request is answered from while the master is away.
        var lastKnown: [String: (access: Access, checkedAt: ContinuousClock.Instant)] = [:]
        var listening = false
        /// Until when the master counts as away after a failed lookup: requests of devices with a
        /// last known answer do not each wait for a connection attempt meanwhile.
        var masterAwayUntil: ContinuousClock.Instant?
        var generation = 0
        /// Checks answered from memory, those that asked the master, and those answered
        /// from the last known answer because the master was away.
        var remembered = 0
        var lookups = 0
        var duringOutage = 0
    }

    let url: DatabaseURL
    let logger: Logger
    /// The longest an entry is used without asking the master again (each lives half of it at least).
    let timeToLive: Duration
    /// Entries kept at most; beyond, everything is forgotten (and refilled by use).
    let capacity: Int
    private let state = Locked(State())

    /// How long after the master last vouched for a token it is still taken while the master is away.
    let outageGrace: Duration

    /// How long a lookup of a token with a last known answer may take before that answer is used.
    let patience: Duration

    init(url: DatabaseURL, logger: Logger, timeToLive: Duration = .seconds(60), capacity: Int = 100_000,
         outageGrace: Duration = .seconds(3_600), patience: Duration = .seconds(2)) {
        self.patience = patience
        self.url = url
        self.logger = logger
        self.timeToLive = timeToLive
        self.capacity = capacity
        self.outageGrace = outageGrace
    }

    /// The access a token gives, from memory when that is safe, else from the
    /// master through `store`; `nil` for an unknown or revoked token.
    func access(secret: String, store: SharedStore) async throws -> Access? {
        let now = ContinuousClock.now
        let (known, generation) = state.mutate { state -> (Access?, Int) in
            guard state.listening, let entry = state.entries[secret], entry.expires > now else {
                state.lookups += 1
                return (nil, state.generation)
            }
            state.remembered += 1
            return (entry.access, state.generation)
        }
        if let known { return known }
        if let last = lastKnownWhileAway(secret, now: now) { return last }
        let fetched: Access?
        do {
            let lookup: @Sendable () async throws -> Access? = {
                try await store.run { central in
                    guard let person = try await central.authenticate(secret: secret) else { return nil }
                    return Access(person: person, teams: try await central.teams(ofPerson: person.id))
                }
            }
            // A device the master vouched for lately does not wait out a master that has stopped
            // answering (a host gone without closing its connections: only the query deadline, 10 s,
            // would end the wait): after `patience` its last known answer is used, as in an outage.
            fetched = hasLastKnown(secret, now: now)
                ? try await withDeadline(patience, timeout: { StoreUnavailable() }, lookup)
                : try await lookup()
        } catch let unavailable as StoreUnavailable {
            // The master is away (restarting, failing over): a device it vouched for lately keeps
            // pulling its replicas and pushing its work into them, which the listener brings in
            // later. Nobody else gets in: an unknown token waits for the master (503).
            let last = state.mutate { state -> Access? in
                state.masterAwayUntil = ContinuousClock.now + .seconds(2)
                guard let last = state.lastKnown[secret], ContinuousClock.now - last.checkedAt < outageGrace else { return nil }
                state.duringOutage += 1
                return last.access
            }
            guard let last else { throw unavailable }
            return last
        }
        guard let fetched else {
            state.mutate { _ = $0.lastKnown.removeValue(forKey: secret) }
            return nil
        }
        state.mutate { state in
            state.masterAwayUntil = nil
            guard state.generation == generation else { return }
            if state.lastKnown.count >= capacity { state.lastKnown.removeAll() }
            state.lastKnown[secret] = (fetched, now)
            guard state.listening else { return }
            if state.entries.count >= capacity { state.entries.removeAll() }
            // Each entry lives a random half to whole time to live: answers fetched together
            // (a fleet reconnecting after a restart) do not all go back to the master together.
            state.entries[secret] = Entry(access: fetched, expires: now + timeToLive * Double.random(in: 0.5...1))
        }
        return fetched
    }

    /// The last known answer for `secret` when the master failed a lookup within the last
    /// seconds: answered at once instead of trying the master again for every request.
    private func lastKnownWhileAway(_ secret: String, now: ContinuousClock.Instant) -> Access? {
        state.mutate { state -> Access? in
            guard let away = state.masterAwayUntil, now < away,
                  let last = state.lastKnown[secret], now - last.checkedAt < outageGrace else { return nil }
            state.duringOutage += 1
            return last.access
        }
    }

    /// Whether the master vouched for `secret` within the outage grace.
    private func hasLastKnown(_ secret: String, now: ContinuousClock.Instant) -> Bool {
        state.mutate { state in state.lastKnown[secret].map { now - $0.checkedAt < outageGrace } ?? false }
    }

    /// Whether remembered answers are used now (the LISTEN is registered).
    var isListening: Bool { state.value.listening }

    /// Token checks that asked the master so far (not remembered, expired, or not listening).
    var lookups: Int { state.value.lookups }

    /// When the remembered answer for `secret` expires, if one is remembered.
    func expiry(of secret: String) -> ContinuousClock.Instant? { state.value.entries[secret]?.expires }

    /// The access lines of `/metrics` (Prometheus text).
    var metrics: String {
        let (remembered, lookups, entries, outage) = state.mutate { ($0.remembered, $0.lookups, $0.entries.count, $0.duringOutage) }
        return """
            # HELP teamwork_sync_access_checks_total Token checks of requests, by where the answer came from
            # TYPE teamwork_sync_access_checks_total counter
            teamwork_sync_access_checks_total{source="memory"} \(remembered)
            teamwork_sync_access_checks_total{source="master"} \(lookups)
            teamwork_sync_access_checks_total{source="last_known_during_outage"} \(outage)
            # HELP teamwork_sync_access_entries Tokens whose access is remembered
            # TYPE teamwork_sync_access_entries gauge
            teamwork_sync_access_entries \(entries)

            """
    }

    /// Forgets what is remembered; with `listening`, says whether the cache may be used from now
    /// on. A notification (access changed) or a LISTEN registered again (changes may have gone
    /// unheard meanwhile) forgets the last known answers too; a lost LISTEN keeps them, for the
    /// master's absence.
    private func forget(listening: Bool? = nil) {
        state.mutate { state in
            state.entries.removeAll()
            if listening != false { state.lastKnown.removeAll() }
            state.generation += 1
            if let listening { state.listening = listening }
        }
    }

    /// Listens until the server shuts down, reconnecting as ``Retrying`` says.
    func run() async throws {
        await cancelWhenGracefulShutdown {
            await Retrying(Backoff(initial: .milliseconds(200), maximum: .seconds(5))).forever(failed: { ending, delay in
                self.forget(listening: false)
                self.logger.warning("access notifications lost; checking every token with the master until they are back",
                                    metadata: ["error": "\(ending)", "delay": "\(delay)"])
            }) { progress in
                try await CentralStore.withStore(self.url, logger: self.logger) { store in
                    try await store.listen(on: CentralStore.accessChannel,
                                           ready: {
                                               progress.made()
                                               self.forget(listening: true)
                                           },
                                           notified: { self.forget() })
                }
            }
        }
        forget(listening: false)
    }
}
