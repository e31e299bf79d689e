import Foundation

/// Times stored and sent as whole milliseconds since 1970 (replicas, the sync protocol, the
/// device's store), converted here and nowhere else.
extension Date {
    /// This time in whole milliseconds since 1970, rounded to the nearest; a time beyond what 64 bits
    /// of milliseconds hold (only a damaged value is) gives the nearest that fits instead of trapping.
    public var millisecondsSince1970: Int64 {
        let milliseconds = (timeIntervalSince1970 * 1000).rounded()
        // 2^63 as a Double: the first value past Int64.max (whose own Double rounds up to it).
        guard milliseconds < 0x1p63 else { return .max }
        guard milliseconds >= -0x1p63 else { return .min }
        return Int64(milliseconds)
    }

    public init(millisecondsSince1970 milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
