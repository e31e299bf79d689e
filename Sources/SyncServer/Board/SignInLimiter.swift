import Foundation
import TeamworkModel

/// Failed sign-ins per address per minute: a token is 256 random bits, so guessing is
/// hopeless anyway, but nobody gets to try at the speed of the network. Only failures
/// count (a dispatcher who signs in is never held up by others' junk), and an IPv6
/// address counts by its /64 (one host commonly holds a whole /64).
struct SignInLimiter: Sendable {
    let perAddress: Int
    private let state = Locked<(windowStart: ContinuousClock.Instant, failures: [String: Int])>((.now, [:]))

    init(perAddress: Int) { self.perAddress = perAddress }

    /// The key an address counts under: IPv4 as it is, IPv6 by its first four groups.
    static func key(_ address: String?) -> String {
        guard let address, !address.isEmpty else { return "unknown" }
        guard address.contains(":") else { return address }
        var groups = address.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        if let gap = groups.firstIndex(of: ""), address.contains("::") {
            let present = groups.filter { !$0.isEmpty }
            groups = Array(present[..<min(gap, present.count)]) + Array(repeating: "0", count: max(0, 8 - present.count))
                + Array(present[min(gap, present.count)...])
        }
        return groups.prefix(4).joined(separator: ":") + "::/64"
    }

    private func window(_ now: ContinuousClock.Instant) {
        state.mutate { state in
            if now - state.windowStart >= .seconds(60) { state = (now, [:]) }
        }
    }

    /// Whether `address` may try now (fewer than the limit of failures this minute).
    func allows(_ address: String, now: ContinuousClock.Instant = .now) -> Bool {
        window(now)
        return state.value.failures[address, default: 0] < perAddress
    }

    /// Counts a failed attempt of `address`.
    func failed(_ address: String, now: ContinuousClock.Instant = .now) {
        window(now)
        state.mutate { state in
            if state.failures.count >= 100_000 { state.failures.removeAll() }
            state.failures[address, default: 0] += 1
        }
    }
}
