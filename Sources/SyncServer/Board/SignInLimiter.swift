import Foundation
import TeamworkModel

/// Sign-in attempts per address per minute, and for everyone together (ten
/// times as many): a token is 256 random bits, so guessing is hopeless anyway,
/// but nobody gets to try it at the speed of the network, nor to fill the
/// session table.
struct SignInLimiter: Sendable {
    let perAddress: Int
    private let state = Locked<(windowStart: ContinuousClock.Instant, counts: [String: Int], total: Int)>((.now, [:], 0))

    init(perAddress: Int) { self.perAddress = perAddress }

    /// Counts one attempt from `address`; false when it is over the limit.
    func admit(_ address: String, now: ContinuousClock.Instant = .now) -> Bool {
        state.mutate { state in
            if now - state.windowStart >= .seconds(60) { state = (now, [:], 0) }
            guard state.counts[address, default: 0] < perAddress, state.total < perAddress * 10 else { return false }
            state.counts[address, default: 0] += 1
            state.total += 1
            return true
        }
    }
}
