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
struct StoreUnavailable: HTTPResponseError {
    var status: HTTPResponse.Status { .serviceUnavailable }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = #"{"error":{"message":"the central store is not available; try again"}}"#
        return Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8", .retryAfter: "2"],
            body: .init(byteBuffer: ByteBuffer(string: body)))
    }
}
