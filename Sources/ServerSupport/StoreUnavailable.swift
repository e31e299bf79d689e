import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The central store could not answer: a 503 with a `Retry-After`, whatever
/// route asked. It renders itself (Hummingbird's `HTTPResponseError`), so a
/// handler that reaches the store through ``SharedStore/run(_:)`` cannot let a
/// connection failure fall through as a 500; the device keeps its work and
/// tries again. Its text never carries the store's own message (which could
/// name a host or a value).
public struct StoreUnavailable: ShownError {
    public init() {}

    public var status: HTTPResponse.Status { .serviceUnavailable }
    public var shownMessage: String { "the central store is not available; try again" }
}
