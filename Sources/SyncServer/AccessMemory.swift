import Foundation
import ServerSupport
import TeamworkModel

/// What a token gives: the person and their teams, by the master.
struct TokenAccess: Sendable, Equatable {
    var person: Person
    var teams: [Team]
}

/// What ``AccessCache`` remembers of tokens, and every rule for when a remembered answer may be
/// used: a value with no I/O and no lock (the cache holds it in one), so each rule is tested
/// on its own, clock in hand.
///
/// - An answer is used from memory only while the LISTEN on `teamwork_access` is registered, and
///   until it expires (each entry a random half to whole ``timeToLive``).
/// - A change of access heard forgets every entry; an answer fetched while a change was heard is
///   not kept (``generation``), and counts as a last known answer only as of the change before it.
/// - The last known answer of a token a request used is what the request is answered from while
///   the master is away, if the master gave it within ``outageGrace`` and no change was heard
///   since it was asked (``changes``). A token never used is not let in by a load alone.
struct AccessMemory {
    struct Entry {
        var access: TokenAccess
        var expires: ContinuousClock.Instant
        /// When the master gave it.
        var vouched: ContinuousClock.Instant
    }

    /// A question for the master: its answer is kept in memory if ``generation`` is still the
    /// current one when it comes, and as the last known answer as of ``changes``.
    struct Asked {
        var generation: Int
        var changes: Int
        var now: ContinuousClock.Instant
    }

    enum Recall {
        case known(TokenAccess)
        /// Not in memory: the master is to be asked.
        case missing(Asked)
        /// Not in memory, and every live token is being loaded: wait for the load, then recall again.
        case awaitLoad
    }

    /// The longest an entry is used without asking the master again (each lives half of it at least).
    let timeToLive: Duration
    /// Entries kept at most; beyond, the expired go, then new answers are not kept.
    let capacity: Int
    /// How long after the master last vouched for a token it is still taken while the master is away.
    let outageGrace: Duration

    private(set) var entries: [TokenDigest: Entry] = [:]
    private var lastKnown: [TokenDigest: (access: TokenAccess, checkedAt: ContinuousClock.Instant, changes: Int)] = [:]
    /// Changes of access heard (or possibly missed, while not listening) so far.
    private var changes = 0
    /// Bumped by every forgetting: an answer asked before it is not kept.
    private(set) var generation = 0
    /// Tokens answered from memory since their use was last recorded on the master.
    private var used: Set<TokenDigest> = []
    private(set) var listening = false
    /// Until when the master counts as away after a failed lookup.
    private var masterAwayUntil: ContinuousClock.Instant?
    /// The people whose access the last load kept found changed (a token revoked, a team left or
    /// joined, a rename), among those whose tokens requests used.
    private(set) var peopleChanged: Set<Int64> = []
    /// Loads of every live token kept, and the generation the last was kept in.
    private(set) var loads = 0
    private var loadedGeneration: Int?
    /// Checks answered from memory, those that asked the master, and those answered from the last
    /// known answer because the master was away.
    private(set) var remembered = 0
    private(set) var lookups = 0
    private(set) var duringOutage = 0

    init(timeToLive: Duration, capacity: Int, outageGrace: Duration) {
        self.timeToLive = timeToLive
        self.capacity = capacity
        self.outageGrace = outageGrace
    }

    /// Whether every live token is in memory as the master has them since its last notification.
    var isLoaded: Bool { listening && loadedGeneration == generation }

    /// What memory says of a token at `now` (counted as remembered or looked up). With
    /// `loadUnderWay`, a token not in memory waits for the load rather than asking the master.
    mutating func recall(_ digest: TokenDigest, at now: ContinuousClock.Instant, loadUnderWay: Bool) -> Recall {
        guard listening, let entry = entries[digest], entry.expires > now else {
            if loadUnderWay, listening, entries[digest] == nil { return .awaitLoad }
            lookups += 1
            return .missing(Asked(generation: generation, changes: changes, now: now))
        }
        remembered += 1
        used.insert(digest)
        // A loaded token counts as checked from its first request on: a device served once keeps
        // working through an outage; a device never seen is not let in by a load alone.
        if lastKnown[digest]?.changes != changes { know(entry.access, for: digest, at: entry.vouched, changes: changes) }
        return .known(entry.access)
    }

    /// Whether the master ever vouched for the token (such a device is not held up by its address's budget).
    func isKnown(_ digest: TokenDigest) -> Bool { lastKnown[digest] != nil }

    /// The last known answer, if the master gave it within the outage grace and no change was heard since.
    func vouchedLately(_ digest: TokenDigest, at now: ContinuousClock.Instant) -> TokenAccess? {
        guard let last = lastKnown[digest], last.changes == changes, now - last.checkedAt < outageGrace else { return nil }
        return last.access
    }

    /// The last known answer while the master failed a lookup within the last seconds: used at
    /// once instead of trying the master again for every request.
    mutating func answerWhileAway(_ digest: TokenDigest, at now: ContinuousClock.Instant) -> TokenAccess? {
        guard let away = masterAwayUntil, now < away, let last = vouchedLately(digest, at: now) else { return nil }
        duringOutage += 1
        return last
    }

    /// The master failed a lookup at `now`: it counts as away for two seconds, and a token it
    /// vouched for lately is answered from its last known answer.
    mutating func masterFailed(_ digest: TokenDigest, at now: ContinuousClock.Instant) -> TokenAccess? {
        masterAwayUntil = now + .seconds(2)
        guard let last = vouchedLately(digest, at: now) else { return nil }
        duringOutage += 1
        return last
    }

    /// The master's answer to `asked`: `nil` (unknown or revoked) forgets the token's last known
    /// answer; an answer is last known as of when it was asked, and kept in memory unless a
    /// change was heard meanwhile.
    mutating func answered(_ fetched: TokenAccess?, for digest: TokenDigest, asked: Asked) {
        guard let fetched else {
            lastKnown[digest] = nil
            return
        }
        masterAwayUntil = nil
        know(fetched, for: digest, at: asked.now, changes: asked.changes)
        // Overtaken by a change, and the load after it has already landed: that load vouched for the
        // token as the master has it now (a late answer must not leave it stale for an outage).
        if asked.changes != changes, listening, loadedGeneration == generation, let loaded = entries[digest] {
            know(loaded.access, for: digest, at: loaded.vouched, changes: changes)
        }
        guard generation == asked.generation, listening else { return }
        if entries.count >= capacity {
            entries = entries.filter { $0.value.expires > asked.now }
            guard entries.count < capacity else { return }
        }
        entries[digest] = entry(fetched, at: asked.now)
    }

    /// The entries a load of every live token at `started` gives, built before the lock the
    /// cache keeps this value in is taken. More live tokens than memory holds: three quarters of
    /// ``capacity`` are kept (room for tokens looked up), the rest looked up as they come.
    func entries(for live: [TokenDigest: TokenAccess], at started: ContinuousClock.Instant) -> [TokenDigest: Entry] {
        var fresh: [TokenDigest: Entry] = [:]
        fresh.reserveCapacity(min(live.count, capacity * 3 / 4))
        for (digest, access) in live where fresh.count < capacity * 3 / 4 { fresh[digest] = entry(access, at: started) }
        return fresh
    }

    /// Every live token, as a load that began in `generation` at `started` found them (and the
    /// ``entries(for:at:)`` they give): kept unless a change was heard meanwhile or the LISTEN was
    /// lost. Whether it was kept.
    mutating func loaded(
        _ live: [TokenDigest: TokenAccess], entries fresh: [TokenDigest: Entry], generation loadGeneration: Int,
        at started: ContinuousClock.Instant
    ) -> Bool {
        guard listening, generation == loadGeneration else { return false }
        // Whose access changed, of the people whose tokens requests used: their open waits are to be checked again.
        peopleChanged = []
        for (digest, known) in lastKnown where live[digest] != known.access { peopleChanged.insert(known.access.person.id) }
        // Last known answers as the master has them now: a token no longer live is dropped, the
        // rest (a teammate's change, a revocation of someone else's) keep serving through an outage.
        lastKnown = lastKnown.reduce(into: [:]) { kept, known in
            if let access = live[known.key] { kept[known.key] = (access, started, changes) }
        }
        // Answers looked up meanwhile are as new as the load's.
        var fresh = fresh
        for (digest, entry) in entries { fresh[digest] = entry }
        entries = fresh
        loads += 1
        loadedGeneration = loadGeneration
        return true
    }

    /// Forgets what is remembered; with `listening`, whether memory may be used from now on. A
    /// notification (`nil`) or a LISTEN registered again (`true`: changes may have gone unheard)
    /// sets the last known answers aside until the next load brings them up to date; a lost
    /// LISTEN (`false`) keeps them, for the master's absence.
    mutating func forget(listening now: Bool? = nil) {
        entries.removeAll()
        if now != false { changes += 1 }
        generation += 1
        if let now { listening = now }
    }

    /// The tokens answered from memory since the last call: their use is to be recorded.
    mutating func takeUsed() -> Set<TokenDigest> {
        defer { used.removeAll() }
        return used
    }

    /// Use that could not be recorded, for the next time.
    mutating func keepUsed(_ tokens: Set<TokenDigest>) { used.formUnion(tokens) }

    private mutating func know(_ access: TokenAccess, for digest: TokenDigest, at checked: ContinuousClock.Instant, changes: Int) {
        if lastKnown.count >= capacity { lastKnown.removeAll() }
        lastKnown[digest] = (access, checked, changes)
    }

    /// Each entry lives a random half to whole time to live: answers fetched together (a fleet
    /// reconnecting after a restart) do not all go back to the master together.
    private func entry(_ access: TokenAccess, at now: ContinuousClock.Instant) -> Entry {
        Entry(access: access, expires: now + timeToLive * Double.random(in: 0.5...1), vouched: now)
    }
}
