import Foundation
import Testing
import TeamworkModel
@testable import WorkerClient

/// How `teamwork-worker watch` tries the server again: a host that refuses the connection (the
/// service restarting) is tried within 8 s; anything else backs off to 30 s.
@Suite("A watching device reconnecting")
struct ReconnectPolicyTests {
    /// A port on this machine that nothing listens on: bound, then closed.
    static func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @Test func aServerWhoseHostRefusesTheConnectionIsTriedAgainWithinEightSeconds() async throws {
        let client = SyncClient(server: URL(string: "http://127.0.0.1:\(try Self.closedPort())/")!, token: "t")
        let failure = try await #require(throws: SyncClient.Failure.self) { try await client.checkReachable() }
        #expect(failure.notListening, "\(failure.message)")
        #expect(Watcher.atMost(after: .failed(failure)) == .seconds(8))
    }

    @Test func otherFailuresBackOffToThirtySeconds() {
        let unanswered = SyncClient.Failure(kind: .unreachable, message: "no answer within 30 s")
        let busy = SyncClient.Failure(kind: .unreachable, message: "the server answered 503", status: 503)
        #expect(Watcher.atMost(after: .failed(unanswered)) == nil)
        #expect(Watcher.atMost(after: .failed(busy)) == nil)
        #expect(Watcher.atMost(after: .failed(CancellationError())) == nil)
        #expect(Watcher.atMost(after: .returned) == nil)
        #expect(Watcher.reconnecting().maximum == .seconds(30))
    }
}
