import Foundation
import TeamworkModel

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Answers read line by line as they arrive (live mode's `stream=N`: one page of changes per
/// line, for as long as the server holds the stream), on a URLSession of their own whose
/// delegate hands each whole line on.
///
/// As with every request of ``SyncClient``, `URLSessionTask.cancel()` is never called (on Linux
/// it can freeze or trap the process): a consumer that stops reading is simply no longer fed,
/// and the transfer ends by itself when the server ends the stream or the request's timeout passes.
final class LineStreams: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// One open stream: where its lines go, and what has come of the line not yet whole.
    private struct Entry {
        var continuation: AsyncThrowingStream<Data, any Error>.Continuation
        var partial = Data()
        /// How much of `partial` is known to hold no newline.
        var scanned = 0
        var response: HTTPURLResponse?
        /// The body of an answer other than 200, kept (up to a limit) for its error message.
        var refusal = Data()
    }

    /// The longest line taken: a page of the largest size the server sends (10,000 tasks) is well under it.
    static let longestLine = 32 * 1024 * 1024

    /// An answer other than 200: its status and (the start of) its body.
    struct Refused: Error {
        var body: Data
        var response: HTTPURLResponse
    }

    private let entries = Locked<[Int: Entry]>([:])
    private let session = Locked<URLSession?>(nil)

    /// No cookies and no cache, as ``HTTPFetch/session`` (its comment says why).
    private func currentSession() -> URLSession {
        session.mutate { session in
            if let session { return session }
            let configuration = URLSessionConfiguration.ephemeral
            configuration.urlCache = nil
            configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
            let made = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
            session = made
            return made
        }
    }

    /// The lines of `request`'s answer, each without its newline; the sequence ends when the
    /// server ends the answer and throws when the transfer fails or the answer is not 200.
    func lines(_ request: URLRequest) -> AsyncThrowingStream<Data, any Error> {
        AsyncThrowingStream { continuation in
            let task = currentSession().dataTask(with: request)
            let id = task.taskIdentifier
            entries.mutate { $0[id] = Entry(continuation: continuation) }
            continuation.onTermination = { [weak self] _ in
                // Whoever stopped reading gets nothing more; the transfer is left to end by itself.
                _ = self?.entries.mutate { $0.removeValue(forKey: id) }
            }
            task.resume()
        }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        entries.mutate { $0[dataTask.taskIdentifier]?.response = response as? HTTPURLResponse }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let id = dataTask.taskIdentifier
        let (lines, continuation, tooLong) = entries.mutate {
            entries -> ([Data], AsyncThrowingStream<Data, any Error>.Continuation?, Bool) in
            // Taken out while it grows (and put back after): a second reference would make each append copy the line.
            guard var entry = entries.removeValue(forKey: id) else { return ([], nil, false) }
            defer { entries[id] = entry }
            guard entry.response?.statusCode == 200 else {
                if entry.refusal.count < 64 * 1024 { entry.refusal.append(data) }
                return ([], nil, false)
            }
            entry.partial.append(data)
            // Only what came since the last look is searched, and the lines are cut off once at the end.
            var lines: [Data] = []
            var start = entry.partial.startIndex
            var from = start + entry.scanned
            while let end = entry.partial[from...].firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(entry.partial[start..<end])
                start = end + 1
                from = start
            }
            if start > entry.partial.startIndex { entry.partial = Data(entry.partial[start...]) }
            entry.scanned = entry.partial.count
            return (lines, entry.continuation, entry.partial.count > Self.longestLine)
        }
        for line in lines where !line.isEmpty { continuation?.yield(Data(line)) }
        if tooLong {
            entries.mutate { $0.removeValue(forKey: id) }?.continuation.finish(throwing: URLError(.dataLengthExceedsMaximum))
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let entry = entries.mutate({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error {
            entry.continuation.finish(throwing: error)
        } else if let response = entry.response, response.statusCode != 200 {
            entry.continuation.finish(throwing: Refused(body: entry.refusal, response: response))
        } else if entry.response == nil {
            entry.continuation.finish(throwing: URLError(.badServerResponse))
        } else {
            // A last line without its newline is a stream cut short, not a page.
            entry.continuation.finish(throwing: entry.partial.isEmpty ? nil : URLError(.networkConnectionLost))
        }
    }

    /// A redirect would carry the `Authorization` header to wherever it points: not followed.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
