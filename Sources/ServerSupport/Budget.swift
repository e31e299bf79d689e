import TeamworkModel

/// How many of something may be open at once, per principal and in total: requests in flight,
/// live streams, uploads, board sign-ins and actions (docs/security.md, "Budgets"). A place is
/// reserved before the work it pays for starts, and given back by its ``Reservation``: once,
/// whether the work ends, fails, or is never started (a response built and then dropped gives
/// its place back when its body goes). A principal at zero is not kept.
public final class Budget<Principal: Hashable & Sendable>: Sendable {
    /// Places one principal may hold at once.
    public let perPrincipal: Int
    /// Places all principals together may hold at once.
    public let total: Int
    private let state = Locked<(counts: [Principal: Int], all: Int)>(([:], 0))

    public init(perPrincipal: Int, total: Int = .max) {
        self.perPrincipal = perPrincipal
        self.total = total
    }

    /// Why a place was not given.
    public enum Refusal: Error, Equatable {
        /// The principal holds ``perPrincipal`` places already.
        case principalFull
        /// All places are taken.
        case totalFull
    }

    /// A place, given back once by ``release()`` or when the reservation goes away.
    public final class Reservation: Sendable {
        private let budget: Budget
        private let principal: Principal
        private let released = Locked(false)

        fileprivate init(_ budget: Budget, _ principal: Principal) {
            self.budget = budget
            self.principal = principal
        }

        public func release() {
            guard
                released.mutate({ done in
                    defer { done = true }
                    return !done
                })
            else { return }
            budget.giveBack(principal)
        }

        deinit { release() }
    }

    /// Reserves a place for `principal`, or says why not.
    public func reserve(for principal: Principal) -> Result<Reservation, Refusal> {
        let refusal = state.mutate { state -> Refusal? in
            guard state.all < total else { return .totalFull }
            guard state.counts[principal, default: 0] < perPrincipal else { return .principalFull }
            state.counts[principal, default: 0] += 1
            state.all += 1
            return nil
        }
        if let refusal { return .failure(refusal) }
        return .success(Reservation(self, principal))
    }

    private func giveBack(_ principal: Principal) {
        state.mutate { state in
            state.counts[principal] = state.counts[principal].map { $0 > 1 ? $0 - 1 : nil } ?? nil
            state.all -= 1
        }
    }

    /// Everything reserved, and the principals holding it.
    public var totals: (all: Int, principals: Int) { state.mutate { ($0.all, $0.counts.count) } }
}
