import CentralStore
import Crypto
import Foundation
import Hummingbird
import Logging
import ServerSupport
import ServiceLifecycle
import TeamworkModel

/// Who a token belongs to and which teams they are in, remembered between
/// requests so that a pull does not cost two PostgreSQL round trips before it
/// touches its replica.
///
/// Every live token is loaded in one pass (two statements) as soon as the
/// LISTEN below is registered, and again after each notification (coalesced):
/// a fleet reconnecting after a restart, or every open stream rechecking after
/// a membership change, is answered from memory instead of queueing two
/// queries a device on one connection (which held 10,000 devices back for
/// seconds after a restart). A token the load does not know (one issued since)
/// is looked up on its own; a request that misses while a load is under way
/// waits for it first (at most ``patience``). What a device is let do while the
/// master is away does not change: only a token a request used is kept as its
/// last known answer, so a device never seen still cannot sign in then.
///
/// PostgreSQL says when to forget: `teamwork_access_changed()` notifies
/// `teamwork_access` when a token is revoked, a membership changes, or a person
/// or team is renamed or removed, and every entry is forgotten at once (a
/// revoked token or a removed member is refused from the next request on,
/// within milliseconds); the last known answers are set aside until the load
/// that follows brings them up to date. A check that must ask the master is
/// paid for first: per address, 30 unknown tokens a minute and 64 checks at once. The cache is used only while that LISTEN is
/// registered: when its connection is lost, every request goes to the master
/// until it is back. Entries also expire within ``timeToLive`` (each at a
/// random point of its second half, so a fleet's entries spread out), and an answer
/// fetched while a notification arrived is not kept (a generation counter),
/// so a revocation racing a lookup is never remembered wrongly.
///
/// Tokens are known by their SHA-256 (``TokenDigest``), as the master stores
/// them: the secrets themselves are not kept.
final class AccessCache: Service, Sendable {
    /// What a token gives: the person and their teams, by the master.
    struct Access: Sendable {
        var person: Person
        var teams: [Team]
    }

    private struct Entry {
        var access: Access
        var expires: ContinuousClock.Instant
        /// When the master gave it.
        var vouched: ContinuousClock.Instant
    }

    private struct State {
        var entries: [TokenDigest: Entry] = [:]
        /// The last answer the master gave for each token a request used, kept through a lost
        /// LISTEN: what a request is answered from while the master is away, if no change of access
        /// was heard since the question was asked (its `changes` is the current one). A change does
        /// not wipe them: the load that follows it brings each up to date (or drops it, for a token
        /// no longer live), an answer asked for before the change included.
        var lastKnown: [TokenDigest: (access: Access, checkedAt: ContinuousClock.Instant, changes: Int)] = [:]
        /// Changes of access heard (or possibly missed, while not listening) so far.
        var changes = 0
        /// The load of every live token under way, if one is: a request that misses waits for it.
        var load: Task<Void, Never>?
        /// Tokens answered from memory since their use was last recorded on the master.
        var used: Set<TokenDigest> = []
        /// Loads of every live token finished and kept, and the generation the last was kept in.
        var loads = 0
        var loadedGeneration: Int?
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

    /// How often the use of tokens answered from memory is recorded on the master (`last_used_at`,
    /// which `teamwork-manager person token list` shows): a device the cache answers for hours is
    /// still seen as in use, in one statement a minute for the whole fleet.
    let usageInterval: Duration

    /// Tokens the master did not know, per address and minute (30): beyond, an address's checks are refused.
    let unknownTokens = AddressLimiter(perAddress: 30)
    /// Checks that ask the master, per address (64 at once) and in total (256): each is a round trip
    /// on the endpoint's shared connection.
    let masterChecks = Budget<String>(perPrincipal: 64, total: 256)

    init(
        url: DatabaseURL, logger: Logger, timeToLive: Duration = .seconds(60), capacity: Int = 100_000,
        outageGrace: Duration = .seconds(3_600), patience: Duration = .seconds(2), usageInterval: Duration = .seconds(60)
    ) {
        self.usageInterval = usageInterval
        self.patience = patience
        self.url = url
        self.logger = logger
        self.timeToLive = timeToLive
        self.capacity = capacity
        self.outageGrace = outageGrace
    }

    /// The access a token gives, from memory when that is safe, else from the
    /// master through `store`; `nil` for an unknown or revoked token.
    func access(secret: String, store: SharedStore, from address: String) async throws -> Access? {
        guard TokenSecret.isWellFormed(secret) else { return nil }
        let digest = TokenDigest(secret: secret)
        var memory = remembered(digest, waiting: true)
        if case .loading(let load) = memory {
            // Every live token is being loaded: this one is most likely in it.
            _ = try? await withDeadline(patience, timeout: { StoreUnavailable() }) { await load.value }
            memory = remembered(digest, waiting: false)
        }
        switch memory {
        case .known(let access): return access
        case .missing(let asked):
            return try await lookUp(digest, secret: secret, store: store, asked: asked, from: address)
        case .loading: preconditionFailure("not asked to wait")
        }
    }

    private enum Remembered {
        case known(Access)
        /// Not in memory: the master is to be asked.
        case missing(Asked)
        /// Not in memory, and every live token is being loaded (with `waiting`).
        case loading(Task<Void, Never>)
    }

    /// When the master is asked: the master's answer is kept in memory if `generation` is still the
    /// current one when it comes, and as the last known answer as of `changes`.
    private struct Asked {
        var generation: Int
        var changes: Int
        var now: ContinuousClock.Instant
    }

    /// What memory says of a token (counted as remembered or looked up). Synchronous and out of
    /// line: it runs in every request's task, whose stack of async frames a connection keeps.
    @inline(never)
    private func remembered(_ digest: TokenDigest, waiting: Bool) -> Remembered {
        let now = ContinuousClock.now
        return state.mutate { state -> Remembered in
            guard state.listening, let entry = state.entries[digest], entry.expires > now else {
                if waiting, state.listening, state.entries[digest] == nil, let load = state.load { return .loading(load) }
                state.lookups += 1
                return .missing(Asked(generation: state.generation, changes: state.changes, now: now))
            }
            state.remembered += 1
            state.used.insert(digest)
            // A loaded token counts as checked from its first request on: a device served once
            // keeps working through an outage; a device never seen is not let in by a load alone.
            if state.lastKnown[digest]?.changes != state.changes {
                know(entry.access, for: digest, at: entry.vouched, changes: state.changes, in: &state)
            }
            return .known(entry.access)
        }
    }

    /// Asks the master (or, while it is away, the last known answer) for a token not in memory.
    @inline(never)
    private func lookUp(
        _ digest: TokenDigest, secret: String, store: SharedStore, asked: Asked,
        from address: String
    ) async throws -> Access? {
        let now = asked.now
        if let last = lastKnownWhileAway(digest, now: now) { return last }
        // A round trip to the master, paid for before it is made, unless the master vouched for this
        // token before (a known device is never held up by junk from its address): an address whose
        // tokens were unknown too often this minute is not heard, and one has at most
        // ``masterChecks``' share going at once.
        var place: Budget<String>.Reservation?
        if state.mutate({ $0.lastKnown[digest] == nil }) {
            guard unknownTokens.allows(address) else {
                throw HTTPError(.tooManyRequests, message: "too many unknown tokens from this address; wait a minute")
            }
            guard case .success(let reserved) = masterChecks.reserve(for: address) else {
                throw HTTPError(.serviceUnavailable, message: "too many token checks at once; try again shortly")
            }
            place = reserved
        }
        defer { place?.release() }
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
            fetched =
                state.mutate({ vouchedLately(digest, now: now, in: $0) }) != nil
                ? try await withDeadline(patience, timeout: { StoreUnavailable() }, lookup)
                : try await lookup()
        } catch let unavailable as StoreUnavailable {
            // The master is away (restarting, failing over): a device it vouched for lately keeps
            // pulling its replicas and pushing its work into them, which the listener brings in
            // later. Nobody else gets in: an unknown token waits for the master (503).
            let last = state.mutate { state -> Access? in
                state.masterAwayUntil = ContinuousClock.now + .seconds(2)
                guard let last = vouchedLately(digest, now: ContinuousClock.now, in: state) else { return nil }
                state.duringOutage += 1
                return last
            }
            guard let last else { throw unavailable }
            return last
        }
        guard let fetched else {
            unknownTokens.failed(address)
            state.mutate { _ = $0.lastKnown.removeValue(forKey: digest) }
            return nil
        }
        state.mutate { state in
            state.masterAwayUntil = nil
            // As of when it was asked: if a change was heard meanwhile, the load that follows the
            // change vouches for it again (or drops it), and until then it is not used.
            know(fetched, for: digest, at: now, changes: asked.changes, in: &state)
            guard state.generation == asked.generation else { return }
            remember(fetched, for: digest, at: now, in: &state)
        }
        return fetched
    }

    /// Keeps the master's answer for a token a request used in memory, while listening. (A
    /// load's tokens become last known answers when a request uses them.)
    private func remember(_ access: Access, for digest: TokenDigest, at now: ContinuousClock.Instant, in state: inout State) {
        guard state.listening else { return }
        if state.entries.count >= capacity {
            // Full: the expired go; if that is not enough, this answer is not kept (the rest stay).
            state.entries = state.entries.filter { $0.value.expires > now }
            guard state.entries.count < capacity else { return }
        }
        state.entries[digest] = entry(access, at: now)
    }

    /// Each entry lives a random half to whole time to live: answers fetched together (a fleet
    /// reconnecting after a restart) do not all go back to the master together.
    private func entry(_ access: Access, at now: ContinuousClock.Instant) -> Entry {
        Entry(access: access, expires: now + timeToLive * Double.random(in: 0.5...1), vouched: now)
    }

    private func know(_ access: Access, for digest: TokenDigest, at checked: ContinuousClock.Instant, changes: Int, in state: inout State) {
        if state.lastKnown.count >= capacity { state.lastKnown.removeAll() }
        state.lastKnown[digest] = (access, checked, changes)
    }

    /// Records on the master the use of the tokens answered from memory since the last time.
    private func recordUse(on store: CentralStore) async throws {
        let used = state.mutate { state in
            defer { state.used.removeAll() }
            return state.used
        }
        do {
            try await store.recordUse(ofTokens: used.map(\.hex))
        } catch {
            state.mutate { $0.used.formUnion(used) }
            throw error
        }
    }

    /// Loads every live token, as the load requests that miss meanwhile wait for; a load that
    /// fails leaves tokens to be looked up one by one as they come. Whether it loaded.
    private func loadWaitedFor(from store: CentralStore) async -> Bool {
        let load = Task {
            do {
                try await self.load(from: store)
                return true
            } catch {
                self.logger.warning("loading every live token failed; looking each up as it comes", metadata: ["error": "\(error)"])
                return false
            }
        }
        state.mutate { $0.load = Task { _ = await load.value } }
        let loaded = await withTaskCancellationHandler {
            await load.value
        } onCancel: {
            load.cancel()
        }
        state.mutate { $0.load = nil }
        return loaded
    }

    /// Loads every live token from `store` (the LISTEN's own connection) and keeps what it
    /// loaded unless a notification came meanwhile; requests that miss wait for it.
    private func load(from store: CentralStore) async throws {
        let generation = state.mutate { $0.generation }
        let started = ContinuousClock.now
        let loaded = try await store.liveAccess()
        // Built outside the lock every request takes, then swapped in. More live tokens than the
        // cache holds: three quarters of `capacity` are kept (room for tokens looked up), the rest
        // looked up as they come.
        var fresh: [TokenDigest: Entry] = [:]
        fresh.reserveCapacity(min(loaded.count, capacity * 3 / 4))
        var live: [TokenDigest: Access] = [:]
        live.reserveCapacity(loaded.count)
        for (bytes, person, teams) in loaded {
            guard let digest = TokenDigest(bytes: bytes) else { continue }
            let access = Access(person: person, teams: teams)
            live[digest] = access
            if fresh.count < capacity * 3 / 4 { fresh[digest] = entry(access, at: started) }
        }
        let kept = state.mutate { state -> Bool in
            guard state.listening, state.generation == generation else { return false }
            // Last known answers as the master has them now: a token no longer live is dropped, the
            // rest (a teammate's change, a revocation of someone else's) keep serving through an outage.
            state.lastKnown = state.lastKnown.reduce(into: [:]) { kept, known in
                if let access = live[known.key] { kept[known.key] = (access, started, state.changes) }
            }
            // Answers looked up meanwhile are as new as the load's.
            for (digest, entry) in state.entries { fresh[digest] = entry }
            swap(&state.entries, &fresh)
            state.loads += 1
            state.loadedGeneration = generation
            return true
        }
        logger.debug(
            "access loaded",
            metadata: [
                "tokens": "\(loaded.count)", "kept": "\(kept)", "seconds": "\(ContinuousClock.now - started)",
            ])
    }

    /// The last known answer for `secret` when the master failed a lookup within the last
    /// seconds: answered at once instead of trying the master again for every request.
    private func lastKnownWhileAway(_ digest: TokenDigest, now: ContinuousClock.Instant) -> Access? {
        state.mutate { state -> Access? in
            guard let away = state.masterAwayUntil, now < away, let last = vouchedLately(digest, now: now, in: state) else { return nil }
            state.duringOutage += 1
            return last
        }
    }

    /// The last known answer for a token, if the master gave it within the outage grace.
    private func vouchedLately(_ digest: TokenDigest, now: ContinuousClock.Instant, in state: State) -> Access? {
        guard let last = state.lastKnown[digest], last.changes == state.changes, now - last.checkedAt < outageGrace else { return nil }
        return last.access
    }

    /// Whether remembered answers are used now (the LISTEN is registered).
    var isListening: Bool { state.value.listening }

    /// Token checks that asked the master so far (not remembered, expired, or not listening).
    var lookups: Int { state.value.lookups }

    /// Loads of every live token finished and kept so far.
    var loads: Int { state.value.loads }

    /// Whether every live token is in memory as the master has them since its last notification.
    var isLoaded: Bool { state.mutate { $0.listening && $0.loadedGeneration == $0.generation } }

    /// When the remembered answer for `secret` expires, if one is remembered.
    func expiry(of secret: String) -> ContinuousClock.Instant? { state.value.entries[TokenDigest(secret: secret)]?.expires }

    /// The access lines of `/metrics` (Prometheus text).
    var metrics: String {
        let (remembered, lookups, entries, outage, loads) = state.mutate {
            ($0.remembered, $0.lookups, $0.entries.count, $0.duringOutage, $0.loads)
        }
        return """
            # HELP teamwork_sync_access_checks_total Token checks of requests, by where the answer came from
            # TYPE teamwork_sync_access_checks_total counter
            teamwork_sync_access_checks_total{source="memory"} \(remembered)
            teamwork_sync_access_checks_total{source="master"} \(lookups)
            teamwork_sync_access_checks_total{source="last_known_during_outage"} \(outage)
            # HELP teamwork_sync_access_entries Tokens whose access is remembered
            # TYPE teamwork_sync_access_entries gauge
            teamwork_sync_access_entries \(entries)
            # HELP teamwork_sync_access_loads_total Loads of every live token (at start and after each change of access)
            # TYPE teamwork_sync_access_loads_total counter
            teamwork_sync_access_loads_total \(loads)

            """
    }

    /// Forgets what is remembered; with `listening`, says whether the cache may be used from now
    /// on. A notification (access changed) or a LISTEN registered again (changes may have gone
    /// unheard meanwhile) sets the last known answers aside until the next load brings them up to
    /// date; a lost LISTEN keeps them, for the master's absence.
    private func forget(listening: Bool? = nil) {
        state.mutate { state in
            state.entries.removeAll()
            if listening != false { state.changes += 1 }
            state.generation += 1
            if let listening { state.listening = listening }
        }
    }

    /// Listens until the server shuts down, reconnecting as ``Retrying`` says.
    func run() async throws {
        await cancelWhenGracefulShutdown {
            // Its queries (the loads, the use records) have a deadline: a query postgres-nio lost
            // when the master went away must not hold the LISTEN's reconnection up.
            await CentralStore.listen(on: CentralStore.accessChannel, at: self.url, queryDeadline: .seconds(10), logger: self.logger) {
                events in
                // The loads and use records of the connection listening now, and how to ask it for a load:
                // each registration and each notification asks, and one asked while a load runs follows it.
                var work: (task: Task<Void, Never>, want: AsyncStream<Void>.Continuation)?
                func stopWork() async {
                    work?.want.finish()
                    work?.task.cancel()
                    await work?.task.value
                    work = nil
                }
                for await event in events {
                    switch event {
                    case .listening(let store):
                        await stopWork()
                        self.forget(listening: true)
                        let (wanted, want) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
                        work = (Task { await self.serve(store, wanted: wanted, want: want) }, want)
                        want.yield()
                    case .notified:
                        self.forget()
                        work?.want.yield()
                    case .lost(let ending, let delay):
                        // Not listening any more: no answer from memory, and no load kept, from now on.
                        self.forget(listening: false)
                        await stopWork()
                        self.logger.warning(
                            "access notifications lost; checking every token with the master until they are back",
                            metadata: ["error": "\(ending)", "delay": "\(delay)"])
                    }
                }
                await stopWork()
            }
        }
        forget(listening: false)
    }

    /// While `store`'s connection listens: loads every live token when asked (a load that failed is
    /// tried again a second later: until one is kept, the last known answers stay set aside), and
    /// records the use of the tokens answered from memory every ``usageInterval``.
    private func serve(_ store: CentralStore, wanted: AsyncStream<Void>, want: AsyncStream<Void>.Continuation) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in wanted where !(await self.loadWaitedFor(from: store)) {
                    do { try await Task.sleep(for: .seconds(1)) } catch { return }
                    want.yield()
                }
            }
            group.addTask {
                while (try? await Task.sleep(for: self.usageInterval)) != nil {
                    do {
                        try await self.recordUse(on: store)
                    } catch {
                        // Kept for the next time; a lost connection ends the LISTEN too.
                        self.logger.warning("recording the use of tokens failed", metadata: ["error": "\(error)"])
                    }
                }
            }
        }
    }
}
