import CentralStore
import Crypto
import Foundation
import ServerSupport
import TeamworkModel

/// Public links checked without the master (issue 64): an appointment link's or a calendar feed's
/// secret is its prefix and 32 bytes in base64url, the signing key's id (its low byte), 19 random
/// bytes and the first 12 bytes of HMAC-SHA-256(key, prefix and those 20 bytes)
/// (`teamwork_link_secret`). A secret whose MAC does not check is made up: it is answered 404 before
/// any budget or the master is asked, so a flood of them never stands between a real customer and
/// their page. Links made before keys existed are unsigned: while one of their kind is still live
/// (`teamwork_link_keys` says), a secret that does not check is looked up as before.
///
/// The keys are read from the master at most every five minutes (and at most once a minute more
/// for a key this service has not seen), never because of what a request sent; the service makes a
/// new key every 90 days, the one before checking links for 31 days more.
public final class LinkKeys: Sendable {
    /// What a secret is, before anything is looked up.
    public enum Verdict: Sendable, Equatable {
        /// Signed by a key the service checks with: look it up.
        case signed
        /// Not signed, and unsigned links of its kind may still be live: look it up, within the budgets.
        case unsigned
        /// Not a secret the service made: 404 at once.
        case madeUp
    }

    public enum Kind: String, Sendable {
        case appointment = "twa_"
        case calendar = "twcal_"
    }

    struct Known: Sendable {
        var keys: [UInt8: SymmetricKey] = [:]
        var legacyAppointments = true
        var legacyFeeds = true
        var loadedAt: ContinuousClock.Instant?
        var askedForUnknownAt: ContinuousClock.Instant?
        /// A request is reading the keys: the others go on with what is known, but for the first read,
        /// which they wait for (its query has a deadline).
        var loading = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    let store: SharedStore<any EndpointStore>
    private let known = Locked(Known())
    /// How often the keys are read again, and how often at most for a key not seen yet.
    static let refresh: Duration = .seconds(300)
    static let unknownRefresh: Duration = .seconds(60)
    /// How old the newest key may grow before the service makes the next.
    static let rotation: Duration = .seconds(90 * 86_400)

    public init(store: SharedStore<any EndpointStore>) { self.store = store }

    /// What `secret` (prefix included, of the shape the route already checked) is.
    public func verdict(_ secret: String, kind: Kind) async -> Verdict {
        guard let body = Self.body(secret, kind: kind) else { return .madeUp }
        let now = ContinuousClock.now
        let mustLoad = known.mutate { state -> Bool in
            let stale = state.loadedAt.map { now - $0 >= Self.refresh } ?? true
            let unseen = state.keys[body[0]] == nil && (state.askedForUnknownAt.map { now - $0 >= Self.unknownRefresh } ?? true)
            guard stale || unseen, !state.loading else { return false }
            if unseen { state.askedForUnknownAt = now }
            state.loading = true
            return true
        }
        if mustLoad {
            // A master that cannot answer now leaves what is known, and is asked again in ten seconds.
            do { try await load() } catch {
                known.mutate { $0.loadedAt = ContinuousClock.now - Self.refresh + .seconds(10) }
            }
            let waiting = known.mutate { state in
                defer { (state.loading, state.waiting) = (false, []) }
                return state.waiting
            }
            for request in waiting { request.resume() }
        } else if known.value.loadedAt == nil {
            await withCheckedContinuation { (request: CheckedContinuation<Void, Never>) in
                let now = known.mutate { state -> Bool in
                    guard state.loading else { return true }
                    state.waiting.append(request)
                    return false
                }
                if now { request.resume() }
            }
        }
        let state = known.value
        if let key = state.keys[body[0]], Self.checks(body, prefix: kind.rawValue, key: key) { return .signed }
        switch kind {
        case .appointment: return state.legacyAppointments ? .unsigned : .madeUp
        case .calendar: return state.legacyFeeds ? .unsigned : .madeUp
        }
    }

    /// The 32 bytes after `kind`'s prefix, or nil when the secret is not of that shape.
    static func body(_ secret: String, kind: Kind) -> [UInt8]? {
        guard secret.hasPrefix(kind.rawValue) else { return nil }
        var text = String(secret.dropFirst(kind.rawValue.count)).replacingOccurrences(of: "-", with: "+")
            .replacingOccurrences(of: "_", with: "/")
        guard text.utf8.count == 43 else { return nil }
        text += "="
        // Only the one way of writing those bytes (the last character's two spare bits zero).
        guard let data = Data(base64Encoded: text), data.count == 32, data.base64EncodedString() == text else { return nil }
        return Array(data)
    }

    /// Whether the last 12 bytes of `body` are the MAC of `prefix` and its first 20 under `key`.
    static func checks(_ body: [UInt8], prefix: String, key: SymmetricKey) -> Bool {
        var message = Array(prefix.utf8)
        message += body[0..<20]
        let mac = Array(HMAC<SHA256>.authenticationCode(for: message, using: key)).prefix(12)
        return zip(mac, body[20...]).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// Reads the keys, and makes a new key when the newest is old enough.
    func load() async throws {
        let read = try await store.run { store in
            try await store.rotateLinkKey(every: Self.rotation)
            return try await store.linkKeys()
        }
        var keys: [UInt8: SymmetricKey] = [:]
        for (id, key) in read.keys { keys[UInt8(truncatingIfNeeded: id)] = SymmetricKey(data: key) }
        known.mutate {
            ($0.keys, $0.legacyAppointments, $0.legacyFeeds) = (keys, read.legacyAppointments, read.legacyFeeds)
            $0.loadedAt = ContinuousClock.now
        }
    }
}
