import Foundation
import HTTPFetch
import TeamworkTestSupport
import Testing

@testable import WorkerClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The device's requests are cancelled all the time (a deadline, Ctrl-C, a live-mode wait cut
/// by a restart). Seen in a full test run: `teamwork-worker watch` trapped in FoundationNetworking
/// ("Trying to access a behaviour for a task that in not in the registry") when a request was
/// cancelled just as it failed (the server restarting refused the connection): a cancel landing
/// then reports the failure unordered against the task leaving the registry
/// (swift-corelibs-foundation #3296). Removing the session's URL cache made it rarer, not gone
/// (the test process itself trapped once more in a full run): the client no longer calls
/// `URLSessionTask.cancel()` at all (HTTPFetch.data(for:)).
@Suite("The device's HTTP requests")
struct URLSessionCancelTests {
    @Test func requestsCancelledAsTheyFailNeverTrap() async throws {
        let port = ServiceProcess.freePort()  // nothing listens: each request fails at once
        let request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/replicas")!)
        for round in 0..<2_000 {
            let attempt = Task { _ = try? await HTTPFetch.data(for: request) }
            // Cancelled before it starts, as it starts, or while it fails.
            for _ in 0..<(round % 4) { await Task.yield() }
            attempt.cancel()
            await attempt.value
        }
    }

    @Test func theSessionKeepsNoCache() {
        #expect(HTTPFetch.session.configuration.urlCache == nil)
        #expect(HTTPFetch.session.configuration.requestCachePolicy == .reloadIgnoringLocalCacheData)
    }
}
