import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The process's open-files limit: every live-mode wait holds a socket, so a fleet
/// needs many. At start the service raises its soft limit to the hard one (what
/// systemd's `LimitNOFILE=` or `ulimit -Hn` allows; docs/operations.md) and says how
/// many waits that leaves room for.
public enum FileLimit {
    /// Descriptors kept for everything but waits: PostgreSQL connections, replica files and
    /// their locks, uploads, the listening socket, logs.
    public static let reserve = 256

    /// Raises the soft limit to the hard limit; returns the limit before and after.
    @discardableResult
    public static func raise() -> (before: Int, now: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return (0, 0) }
        let before = Int(clamping: limit.rlim_cur)
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return (before, Int(clamping: raised.rlim_cur)) }
        }
        return (before, before)
    }

    /// The soft limit now.
    public static var current: Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        return Int(clamping: limit.rlim_cur)
    }

    /// How many live-mode waits the open-files limit leaves room for.
    public static var waitCapacity: Int { max(0, current - reserve) }
}
