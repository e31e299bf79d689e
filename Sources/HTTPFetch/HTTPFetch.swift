import Foundation
import TeamworkModel

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP request over Foundation's URLSession, as every Teamwork client makes it (the worker's
/// sync client, the day planner's road network): no cookies, no cache, no redirects followed, and
/// cancellation that neither deadlocks nor traps on Linux. The caller puts its deadline around it.
public enum HTTPFetch {
    public static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return URLSession(configuration: configuration, delegate: RefuseRedirects(), delegateQueue: nil)
    }()

    /// One request on ``session``, cancellable without deadlock or trap.
    ///
    /// `URLSessionTask.cancel()` is never called. On Linux it can freeze the
    /// process (cancelling holds the Swift task's status lock while `cancel()`
    /// waits for URLSession's queue, which, finishing the transfer, waits for the
    /// same lock: seen as `teamwork-worker watch` stuck for good, deaf to SIGTERM)
    /// and it can trap ("Trying to access a behaviour for a task that in not in
    /// the registry", swift-corelibs-foundation #3296: a cancel landing as the
    /// request fails; seen in full test runs, reproduced by URLSessionCancelTests
    /// even without a URL cache). Instead a cancelled call returns at once with
    /// `CancellationError` and the transfer is left to end by itself, bounded by
    /// the request's own timeout; whichever comes first resumes the caller, once.
    public static func data(for request: URLRequest) async throws -> (Data, URLResponse) {
        let waiting = Locked<CheckedContinuation<(Data, URLResponse), any Error>?>(nil)
        let cancelled = Locked(false)
        @Sendable func finish(_ outcome: Result<(Data, URLResponse), any Error>) {
            waiting.mutate { continuation in
                defer { continuation = nil }
                return continuation
            }?.resume(with: outcome)
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, URLResponse), any Error>) in
                waiting.mutate { $0 = continuation }
                // Cancelled before the handler could see a continuation to resume.
                if cancelled.value || Task.isCancelled { return finish(.failure(CancellationError())) }
                session.dataTask(with: request) { data, response, error in
                    if let error {
                        finish(.failure(error))
                    } else if let data, let response {
                        finish(.success((data, response)))
                    } else {
                        finish(.failure(URLError(.badServerResponse)))
                    }
                }.resume()
            }
        } onCancel: {
            cancelled.mutate { $0 = true }
            finish(.failure(CancellationError()))
        }
    }

    public final class RefuseRedirects: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
        public func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
        ) {
            completionHandler(nil)
        }
    }
}
