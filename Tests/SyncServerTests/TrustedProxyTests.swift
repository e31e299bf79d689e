import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import TeamworkModel
import Testing

@testable import SyncServer

/// Behind a proxy (issue 64): every connection comes from the proxy's address, so a budget per
/// address (30 unknown tokens a minute) would be everybody's at once. With `--trusted-proxy` the
/// budgets count the client the proxy names; without it, `X-Forwarded-For` is a client's own words
/// and changes nothing.
@Suite("Sync endpoint: behind a trusted proxy")
struct TrustedProxyTests {
    static let uri = "/v1/replicas"

    static func unknownToken(_ client: any TestClientProtocol, forwardedFor: String?) async throws -> HTTPResponse.Status {
        var headers: HTTPFields = [.authorization: "Bearer \(TokenSecret.generate())"]
        if let forwardedFor { headers[HTTPField.Name("X-Forwarded-For")!] = forwardedFor }
        return try await client.execute(uri: uri, method: .get, headers: headers).status
    }

    @Test func aTrustedProxysClientsEachHaveTheirOwnBudgetAndCannotWriteThemselvesAnother() async throws {
        try await SyncServerTests().withServer(.live, configure: { $0.trustedProxies = ["127.0.0.1"] }) { _, client in
            // One client behind the proxy spends its budget of unknown tokens...
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<31 { statuses.append(try await Self.unknownToken(client, forwardedFor: "198.51.100.7")) }
            #expect(statuses.dropLast() == Array(repeating: .unauthorized, count: 30) && statuses.last == .tooManyRequests)
            // ...and writing another address before the proxy's entry does not give it a new one.
            #expect(try await Self.unknownToken(client, forwardedFor: "203.0.113.9, 198.51.100.7") == .tooManyRequests)
            // Another client behind the same proxy is not held back by it.
            #expect(try await Self.unknownToken(client, forwardedFor: "198.51.100.8") == .unauthorized)
            // A chain of trusted proxies: the client is the rightmost address none of them holds.
            #expect(try await Self.unknownToken(client, forwardedFor: "198.51.100.7, 127.0.0.1") == .tooManyRequests)
        }
    }

    @Test func withoutATrustedProxyForwardedForIsIgnored() async throws {
        try await SyncServerTests().withServer(.live) { _, client in
            var statuses: [HTTPResponse.Status] = []
            for index in 0..<30 { statuses.append(try await Self.unknownToken(client, forwardedFor: "198.51.100.\(index + 1)")) }
            #expect(statuses == Array(repeating: .unauthorized, count: 30))
            let fresh = try await Self.unknownToken(client, forwardedFor: "203.0.113.200")
            #expect(fresh == .tooManyRequests, "all were 127.0.0.1's")
        }
    }

    @Test func onlyAddressesAreTakenFromTheHeader() throws {
        let trusted: Set<String> = ["10.0.0.2"]
        #expect(ForwardedClient.client(["198.51.100.7"], trusted: trusted)?.ipAddress == "198.51.100.7")
        #expect(ForwardedClient.client(["198.51.100.7, 10.0.0.2"], trusted: trusted)?.ipAddress == "198.51.100.7")
        #expect(ForwardedClient.client(["junk, 198.51.100.7"], trusted: trusted)?.ipAddress == "198.51.100.7")
        #expect(ForwardedClient.client(["198.51.100.7", "2001:db8::1"], trusted: trusted)?.ipAddress == "2001:db8::1")
        #expect(ForwardedClient.client(["198.51.100.7:443"], trusted: trusted)?.ipAddress == "198.51.100.7")
        #expect(ForwardedClient.client(["[2001:db8::1]:443, 10.0.0.2"], trusted: trusted)?.ipAddress == "2001:db8::1")
        // A neighbour in a trusted proxy's IPv6 network is not the proxy (budgets count a /64; trust does not).
        let six: Set<String> = [try #require(SyncServer.proxyKey("2001:db8::2"))]
        #expect(SyncServer.proxyKey("2001:db8::3") != SyncServer.proxyKey("2001:db8::2"))
        #expect(ForwardedClient.client(["198.51.100.7, 2001:db8::3"], trusted: six)?.ipAddress == "2001:db8::3")
        #expect(ForwardedClient.client(["198.51.100.7, 2001:DB8::2"], trusted: six)?.ipAddress == "198.51.100.7")
        #expect(ForwardedClient.client([], trusted: trusted) == nil)
    }
}
