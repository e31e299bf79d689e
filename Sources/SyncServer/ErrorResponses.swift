import BlobStore
import HTTPTypes
import Hummingbird
import ServerSupport
import TeamDatabase

/// The storage errors a request can meet answer for themselves (``ShownError``): a handler logs
/// what it met and throws it on. The message names no path.
extension BlobError: ShownError {
    public var status: HTTPResponse.Status {
        if case .digestMismatch = self { return .unprocessableContent }
        return .serviceUnavailable
    }

    public var shownMessage: String {
        switch self {
        case .digestMismatch(let expected, let actual): "the bytes hash to \(actual), not \(expected); nothing is kept"
        case .unreadable, .cannotWrite: "the server cannot store files right now; try again"
        }
    }
}

/// A replica another writer holds: the device keeps its changes and tries again shortly.
extension ReplicaBusy: ShownError {
    public var status: HTTPResponse.Status { .serviceUnavailable }
    public var shownMessage: String { "\(replica.name) is busy; try again shortly" }
}
