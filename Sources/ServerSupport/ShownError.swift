import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TeamworkModel

/// An error that answers for itself: the status it comes to and a line fit to show the caller
/// (it names no path, host or value of anyone's). Thrown on from wherever it is met, it renders
/// as `{"error":{"message":…}}` (Hummingbird's `HTTPResponseError`); a 503 or a 429 says when
/// to try again. The board shows the same line on its own page (`BoardRoutes`' error pages):
/// one way from an error to an answer, for every route.
public protocol ShownError: HTTPResponseError {
    /// The line the caller sees.
    var shownMessage: String { get }
}

extension ShownError {
    /// When to try again, in seconds, for a 503 or a 429; `nil` for any other status.
    public var retryAfter: String? {
        switch status {
        case .serviceUnavailable: "2"
        case .tooManyRequests: "60"
        default: nil
        }
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = (try? JSONEncoder().encode(["error": ["message": shownMessage]])) ?? Data(#"{"error":{}}"#.utf8)
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"]
        headers[.retryAfter] = retryAfter
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}

/// Teamwork's own error as an answer: a refusal (no such id, a stale version, bad input) is the
/// caller's 4xx with its message; anything else is a 503 or a 500 whose text says nothing of the cause.
extension TeamworkError: ShownError {
    public var status: HTTPResponse.Status {
        switch code {
        case .notFound: .notFound
        case .conflict: .conflict
        case .invalidInput, .usage: .unprocessableContent
        case .unavailable, .unreadableFile, .cannotWrite: .serviceUnavailable
        case .configuration, .internal: .internalServerError
        }
    }

    public var shownMessage: String {
        switch status {
        case .serviceUnavailable: "the central store is not available; try again"
        case .internalServerError: "the server failed; the operator's log says why"
        default: message
        }
    }
}
