import Foundation
import TeamworkModel

/// Failed attempts per address per minute (board sign-ins, unknown board sessions, unknown
/// worker tokens), counted before the attempt costs the master anything: a token is 256 random
/// bits, so guessing is hopeless anyway, but nobody gets to try at the speed of the network, nor
/// make the master work for junk. An attempt can be counted as a failure as it starts
/// (``attempt(_:now:)``) and given back if it succeeds, or checked for room first (``allows(_:now:)``)
/// and counted once it failed. An IPv6 address counts by its /64 (one host commonly holds a whole
/// /64); an IPv4 address arriving on a dual-stack socket (`::ffff:192.0.2.7`) counts as itself.
public struct AddressLimiter: Sendable {
    public let perAddress: Int
    private let state = Locked<(windowStart: ContinuousClock.Instant, failures: [String: Int])>((.now, [:]))

    public init(perAddress: Int) { self.perAddress = perAddress }

    /// The key an address counts under: IPv4 as it is (mapped into IPv6 or not), IPv6 by its first four groups.
    public static func key(_ address: String?) -> String {
        guard let address, !address.isEmpty else { return "unknown" }
        guard address.contains(":") else { return address }
        let lowered = address.lowercased()
        for mapped in ["::ffff:", "0:0:0:0:0:ffff:"] where lowered.hasPrefix(mapped) {
            let rest = lowered.dropFirst(mapped.count)
            if rest.contains(".") { return String(rest) }
            let words = rest.split(separator: ":").compactMap { UInt16($0, radix: 16) }
            if words.count == 2 { return "\(words[0] >> 8).\(words[0] & 0xFF).\(words[1] >> 8).\(words[1] & 0xFF)" }
        }
        var groups = address.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        if let gap = groups.firstIndex(of: ""), address.contains("::") {
            let present = groups.filter { !$0.isEmpty }
            groups =
                Array(present[..<min(gap, present.count)]) + Array(repeating: "0", count: max(0, 8 - present.count))
                + Array(present[min(gap, present.count)...])
        }
        return groups.prefix(4).joined(separator: ":") + "::/64"
    }

    private func window(_ now: ContinuousClock.Instant, _ state: inout (windowStart: ContinuousClock.Instant, failures: [String: Int])) {
        if now - state.windowStart >= .seconds(60) { state = (now, [:]) }
    }

    /// Counts an attempt of `address` as failed before it is made; false (nothing counted) when
    /// the address has used its attempts this minute.
    public func attempt(_ address: String, now: ContinuousClock.Instant = .now) -> Bool {
        state.mutate { state in
            window(now, &state)
            guard state.failures[address, default: 0] < perAddress else { return false }
            if state.failures.count >= 100_000 { state.failures.removeAll() }
            state.failures[address, default: 0] += 1
            return true
        }
    }

    /// Whether `address` has failures to spare this minute (nothing counted).
    public func allows(_ address: String, now: ContinuousClock.Instant = .now) -> Bool {
        state.mutate { state in
            window(now, &state)
            return state.failures[address, default: 0] < perAddress
        }
    }

    /// Counts a failure of `address` found after the fact (an unknown session).
    public func failed(_ address: String, now: ContinuousClock.Instant = .now) {
        state.mutate { state in
            window(now, &state)
            if state.failures.count >= 100_000 { state.failures.removeAll() }
            state.failures[address, default: 0] += 1
        }
    }

    /// An attempt of `address` signed in: it no longer counts.
    public func succeeded(_ address: String, now: ContinuousClock.Instant = .now) {
        state.mutate { state in
            window(now, &state)
            if let count = state.failures[address] { state.failures[address] = count > 1 ? count - 1 : nil }
        }
    }
}
