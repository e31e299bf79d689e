import Foundation

/// A value shared between tasks and threads, behind a lock.
public final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    public init(_ value: Value) { stored = value }

    public var value: Value { lock.withLock { stored } }

    @discardableResult
    public func mutate<R>(_ body: (inout Value) -> R) -> R { lock.withLock { body(&stored) } }
}
