import BlobStore
import HTTPTypes
import Hummingbird
import ServerSupport
import TeamDatabase

/// The storage errors a request can meet render themselves as HTTP answers (Hummingbird's
/// `HTTPResponseError`, as ``StoreUnavailable`` does): a handler logs what it met and throws it
/// on, instead of turning it into an answer where it caught it. The message names no path.
extension BlobError: HTTPResponseError {
    public var status: HTTPResponse.Status {
        if case .digestMismatch = self { return .unprocessableContent }
        return .serviceUnavailable
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let message: String
        switch self {
        case .digestMismatch(let expected, let actual): message = "the bytes hash to \(actual), not \(expected); nothing is kept"
        case .unreadable, .cannotWrite: message = "the server cannot store files right now; try again"
        }
        return try HTTPError(status, message: message).response(from: request, context: context)
    }
}

/// A replica another writer holds: the device keeps its changes and tries again shortly.
extension ReplicaBusy: HTTPResponseError {
    public var status: HTTPResponse.Status { .serviceUnavailable }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        try HTTPError(status, message: "\(replica.name) is busy; try again shortly").response(from: request, context: context)
    }
}
