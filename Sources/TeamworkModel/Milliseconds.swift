import Foundation

/// Times stored and sent as whole milliseconds since 1970 (replicas, the sync protocol, the
/// device's store), converted here and nowhere else.
extension Date {
    /// This time in whole milliseconds since 1970, rounded to the nearest.
    public var millisecondsSince1970: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }

    public init(millisecondsSince1970 milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
