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
/// them: the secrets themselves are not kept. Every rule for when a remembered answer may be
/// used is ``AccessMemory``'s, a value without I/O; this class does the asking, loading and listening.
final class AccessCache: Service, Sendable {
    typealias Access = TokenAccess

    private struct State {
        var memory: AccessMemory
        /// The load of every live token under way, if one is: a request that misses waits for it.
        var load: Task<Void, Never>?
    }

    let url: DatabaseURL
    let logger: Logger
    private let state: Locked<State>

    /// How long a lookup of a token with a last known answer may take before that answer is used.
    let patience: Duration

    /// Told of each load kept that found people's access changed (among those whose tokens requests
    /// used): memory holds every live token's access as the master has it, so their open waits may be
    /// checked again now.
    let accessChanged: @Sendable (Set<Int64>) -> Void

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
        outageGrace: Duration = .seconds(3_600), patience: Duration = .seconds(2), usageInterval: Duration = .seconds(60),
        accessChanged: @escaping @Sendable (Set<Int64>) -> Void = { _ in }
    ) {
        self.accessChanged = accessChanged
        self.usageInterval = usageInterval
        self.patience = patience
        self.url = url
        self.logger = logger
        self.state = Locked(State(memory: AccessMemory(timeToLive: timeToLive, capacity: capacity, outageGrace: outageGrace)))
    }

    /// The access a token gives, from memory when that is safe, else from the
    /// master through `store`; `nil` for an unknown or revoked token. The caller's address (the key
    /// unknown tokens count under) is worked out only for a token memory does not answer.
    func access(secret: String, store: SharedStore<any EndpointStore>, from address: @autoclosure () -> String) async throws -> Access? {
        guard TokenSecret.isWellFormed(secret) else { return nil }
        let digest = TokenDigest(secret: secret)
        var (recall, load) = recall(digest, waiting: true)
        var key: String?
        if case .awaitLoad = recall, let load {
            // Read before waiting: a connection that closes meanwhile no longer has an address, and its
            // unknown tokens would count under everybody's "unknown".
            key = address()
            // Every live token is being loaded: this one is most likely in it.
            _ = try? await withDeadline(patience, timeout: { StoreUnavailable() }) { await load.value }
            (recall, _) = self.recall(digest, waiting: false)
        }
        switch recall {
        case .known(let access): return access
        case .missing(let asked): return try await lookUp(digest, secret: secret, store: store, asked: asked, from: key ?? address())
        case .awaitLoad: preconditionFailure("not asked to wait")
        }
    }

    /// What memory says of a token. Synchronous and out of line: it runs in every request's
    /// task, whose stack of async frames a connection keeps.
    @inline(never)
    private func recall(_ digest: TokenDigest, waiting: Bool) -> (AccessMemory.Recall, Task<Void, Never>?) {
        let now = ContinuousClock.now
        return state.mutate { state in
            (state.memory.recall(digest, at: now, loadUnderWay: waiting && state.load != nil), state.load)
        }
    }

    /// Asks the master (or, while it is away, the last known answer) for a token not in memory.
    @inline(never)
    private func lookUp(
        _ digest: TokenDigest, secret: String, store: SharedStore<any EndpointStore>, asked: AccessMemory.Asked, from address: String
    ) async throws -> Access? {
        let now = asked.now
        if let last = state.mutate({ $0.memory.answerWhileAway(digest, at: now) }) { return last }
        // A round trip to the master, paid for before it is made, unless the master vouched for this
        // token before (a known device is never held up by junk from its address): an address whose
        // tokens were unknown too often this minute is not heard, and one has at most
        // ``masterChecks``' share going at once.
        var place: Budget<String>.Reservation?
        if !state.mutate({ $0.memory.isKnown(digest) }) {
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
                state.mutate({ $0.memory.vouchedLately(digest, at: now) }) != nil
                ? try await withDeadline(patience, timeout: { StoreUnavailable() }, lookup)
                : try await lookup()
        } catch let unavailable as StoreUnavailable {
            // The master is away (restarting, failing over): a device it vouched for lately keeps
            // pulling its replicas and pushing its work into them, which the listener brings in
            // later. Nobody else gets in: an unknown token waits for the master (503).
            guard let last = state.mutate({ $0.memory.masterFailed(digest, at: ContinuousClock.now) }) else { throw unavailable }
            return last
        }
        if fetched == nil { unknownTokens.failed(address) }
        state.mutate { $0.memory.answered(fetched, for: digest, asked: asked) }
        return fetched
    }

    /// Records on the master the use of the tokens answered from memory since the last time.
    private func recordUse(on store: CentralStore) async throws {
        let used = state.mutate { $0.memory.takeUsed() }
        do {
            try await store.recordUse(ofTokens: used.map(\.hex))
        } catch {
            state.mutate { $0.memory.keepUsed(used) }
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
        let (generation, memory) = state.mutate { ($0.memory.generation, $0.memory) }
        let started = ContinuousClock.now
        let loaded = try await store.liveAccess()
        var live: [TokenDigest: Access] = [:]
        live.reserveCapacity(loaded.count)
        for (bytes, person, teams) in loaded {
            guard let digest = TokenDigest(bytes: bytes) else { continue }
            live[digest] = Access(person: person, teams: teams)
        }
        // Built outside the lock every request takes, then swapped in.
        let entries = memory.entries(for: live, at: started)
        let (kept, changed) = state.mutate { state in
            (state.memory.loaded(live, entries: entries, generation: generation, at: started), state.memory.peopleChanged)
        }
        if kept, !changed.isEmpty { accessChanged(changed) }
        logger.debug(
            "access loaded",
            metadata: [
                "tokens": "\(loaded.count)", "kept": "\(kept)", "seconds": "\(ContinuousClock.now - started)",
            ])
    }

    /// Whether remembered answers are used now (the LISTEN is registered).
    var isListening: Bool { state.value.memory.listening }

    /// Token checks that asked the master so far (not remembered, expired, or not listening).
    var lookups: Int { state.value.memory.lookups }

    /// Loads of every live token finished and kept so far.
    var loads: Int { state.value.memory.loads }

    /// Whether every live token is in memory as the master has them since its last notification.
    var isLoaded: Bool { state.value.memory.isLoaded }

    /// When the remembered answer for `secret` expires, if one is remembered.
    func expiry(of secret: String) -> ContinuousClock.Instant? { state.value.memory.entries[TokenDigest(secret: secret)]?.expires }

    /// The access lines of `/metrics` (Prometheus text).
    var metrics: String {
        let memory = state.value.memory
        return """
            # HELP teamwork_sync_access_checks_total Token checks of requests, by where the answer came from
            # TYPE teamwork_sync_access_checks_total counter
            teamwork_sync_access_checks_total{source="memory"} \(memory.remembered)
            teamwork_sync_access_checks_total{source="master"} \(memory.lookups)
            teamwork_sync_access_checks_total{source="last_known_during_outage"} \(memory.duringOutage)
            # HELP teamwork_sync_access_entries Tokens whose access is remembered
            # TYPE teamwork_sync_access_entries gauge
            teamwork_sync_access_entries \(memory.entries.count)
            # HELP teamwork_sync_access_loads_total Loads of every live token (at start and after each change of access)
            # TYPE teamwork_sync_access_loads_total counter
            teamwork_sync_access_loads_total \(memory.loads)

            """
    }

    private func forget(listening: Bool? = nil) { state.mutate { $0.memory.forget(listening: listening) } }

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
