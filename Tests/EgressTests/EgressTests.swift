import Foundation
import TeamworkModel
import Testing

@testable import Egress

/// What the service sends out is bounded and goes only where it may (docs/security.md, "Egress"),
/// tried against receivers on this machine that answer as hostile ones do.
@Suite("Egress")
struct EgressTests {
    /// Loopback let through by name, as an operator's `--egress-allow` does.
    static let loopback = EgressPolicy(allowed: [AddressRange("127.0.0.1/32")!])

    static func post(_ port: Int, host: String = "127.0.0.1") -> EgressClient.Request {
        EgressClient.Request(method: .POST, url: URL(string: "http://\(host):\(port)/hooks")!, body: Data("{}".utf8))
    }

    @Test func specialPurposeAddressesAndThisMachinesOwnAreRefusedAndOrdinaryPublicOnesAreNot() throws {
        let refused = [
            "127.0.0.1", "10.1.2.3", "192.168.0.9", "172.20.0.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
            "192.0.2.10", "198.51.100.7", "203.0.113.9", "198.18.0.1", "192.0.0.170", "224.0.0.1", "240.0.0.1",
            "255.255.255.255", "::1", "::", "::7f00:1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::7f00:1",
            "64:ff9b:1::1", "2002:7f00:1::1", "2001:db8::1", "2001::1", "3fff::1", "fc00::1", "fd12::1", "fe80::1",
            "ff02::1", "100::1", "5f00::1", "4000::1", "168.63.129.16", "::ffff:168.63.129.16",
        ]
        let policy = EgressPolicy()
        for text in refused {
            let address = try #require(IPAddress(text), "\(text)")
            #expect(policy.refusal(address) != nil, "\(text) should be refused")
        }
        for own in SpecialAddresses.ownAddresses() {
            #expect(policy.refusal(own) != nil, "this machine's own \(own) should be refused")
        }
        for text in ["93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:2800:220:1:248:1893:25c8:1946", "2a00:1450:4001::1"] {
            let address = try #require(IPAddress(text))
            #expect(policy.refusal(address) == nil, "\(text) should go")
        }
    }

    @Test func anOperatorsAllowListLetsThroughItsRangesOnly() throws {
        let policy = EgressPolicy(allowed: [AddressRange("10.0.5.0/24")!, AddressRange("fd00:5::/32")!])
        #expect(policy.refusal(IPAddress("10.0.5.77")!) == nil)
        #expect(policy.refusal(IPAddress("fd00:5:1::2")!) == nil)
        #expect(policy.refusal(IPAddress("10.0.6.1")!) != nil)
        #expect(policy.refusal(IPAddress("127.0.0.1")!) != nil)
        #expect(AddressRange("10.0.5.0/33") == nil && AddressRange("not-an-address") == nil)
        // Allowing a range that holds this machine's own address is not allowing the service to call itself.
        let loopbackRange = EgressPolicy(allowed: [AddressRange("127.0.0.0/8")!])
        #expect(loopbackRange.refusal(IPAddress("127.0.0.1")!) != nil && loopbackRange.refusal(IPAddress("127.0.0.2")!) != nil)
        #expect(Self.loopback.refusal(IPAddress("127.0.0.1")!) == nil, "named as itself, it goes")
    }

    /// Seen on main: a receiver's endless answer grew the service to 1.1 GB; only an idle timeout ended it.
    /// The limit ends it, not the deadline: a deadline of 10 s was once not enough for the first 4 KB
    /// while the suite's start loaded the machine (as a 1 s deadline once took 8.8 s to end, below).
    @Test func anEndlessAnswerIsReadToItsLimitAndItsConnectionClosedAtOnce() async throws {
        let receiver = try await HostileReceiver(.endless)
        defer { Task { await receiver.stop() } }
        let answer = try await EgressClient.send(Self.post(receiver.port), policy: Self.loopback, timeout: .seconds(60), bodyLimit: 4096)
        #expect(answer.status == 200)
        #expect(answer.body.count == 4096 && answer.truncated)
        #expect(await receiver.drained(within: 5), "the connection is closed once the limit is read")
    }

    /// A body dribbled forever never reaches the 1 MB limit: the 1 s deadline ends it, says so, and
    /// closes the connection. (No wall-clock bound tighter than "it ends": the suite's start loads the
    /// machine, and a CI run saw 8.8 s from the call to its end.)
    @Test func anAnswerThatNeverEndsEndsAtTheDeadlineWithItsConnection() async throws {
        let receiver = try await HostileReceiver(.dribble(every: .milliseconds(50)))
        defer { Task { await receiver.stop() } }
        let started = ContinuousClock.now
        var failure: EgressFailure?
        do {
            _ = try await EgressClient.send(Self.post(receiver.port), policy: Self.loopback, timeout: .seconds(1), bodyLimit: 1 << 20)
        } catch let error as EgressFailure {
            failure = error
        }
        #expect(failure?.description.contains("no whole answer within 1.0 seconds") == true, "\(String(describing: failure))")
        #expect(ContinuousClock.now - started < .seconds(60), "it ends")
        #expect(await receiver.drained(within: 5), "the deadline closes the connection, not only the wait")
    }

    /// Seen in CI on main: a loaded machine left the connect 1 ms of the 1 s deadline, and the failure
    /// said "cannot reach 127.0.0.1: Connect timeout (1 ms)". A connect that never completes (a
    /// receiver whose queue of connections is full) ends at the deadline and says it is the deadline's.
    @Test func aConnectThatNeverCompletesEndsAtTheDeadlineAndSaysSo() async throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, size) == 0 && getsockname(listener, $0, &size) == 0
            }
        }
        #expect(bound && listen(listener, 0) == 0)
        // Never accepted: these fill the queue, and a connect after them waits for an answer that never comes.
        var fillers: [Int32] = []
        defer { fillers.forEach { close($0) } }
        for _ in 0..<4 {
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            fillers.append(filler)
            _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, size) } }
        }
        try await Task.sleep(for: .milliseconds(100))
        let port = Int(UInt16(bigEndian: address.sin_port))
        var failure: EgressFailure?
        do {
            _ = try await EgressClient.send(Self.post(port), policy: Self.loopback, timeout: .seconds(1), bodyLimit: 1024)
        } catch let error as EgressFailure {
            failure = error
        }
        #expect(failure?.description.contains("no whole answer within 1.0 seconds") == true, "\(String(describing: failure))")
    }

    /// Seen on main: a name vetted by one lookup and connected to by another (curl's) reached loopback.
    /// Here the name answers the allowed 127.0.0.1 first and 127.0.0.2 afterwards: the request goes to
    /// the address that was vetted, after one lookup.
    @Test func aNameIsLookedUpOnceAndConnectedToAsVettedSoItCannotRebind() async throws {
        let vetted = try await HostileReceiver(.short, host: "127.0.0.1")
        defer { Task { await vetted.stop() } }
        let rebound = try await HostileReceiver(.short, host: "127.0.0.2", port: vetted.port)
        defer { Task { await rebound.stop() } }
        let lookups = Locked(0)
        let resolver: EgressClient.Resolver = { host in
            #expect(host == "rebind.test")
            let count = lookups.mutate { count -> Int in
                count += 1
                return count
            }
            return [IPAddress(count == 1 ? "127.0.0.1" : "127.0.0.2")!]
        }
        for _ in 0..<3 {
            lookups.mutate { $0 = 0 }
            // The deadline is not what this proves: a whole answer from this machine took over 5 s once in a
            // CI run, under the suite's start (a failed test, not a rebinding).
            let answer = try await EgressClient.send(
                Self.post(vetted.port, host: "rebind.test"), policy: Self.loopback, timeout: .seconds(30), bodyLimit: 4096,
                resolver: resolver)
            #expect(answer.status == 204)
            #expect(lookups.value == 1)
        }
        #expect(vetted.accepted == 3 && rebound.accepted == 0)
    }

    @Test func aNameThatAlsoPointsInsideIsRefusedWholeWithoutConnecting() async throws {
        let receiver = try await HostileReceiver(.short)
        defer { Task { await receiver.stop() } }
        let resolver: EgressClient.Resolver = { _ in [IPAddress("93.184.216.34")!, IPAddress("127.0.0.1")!] }
        do {
            _ = try await EgressClient.send(
                Self.post(receiver.port, host: "mixed.test"), policy: EgressPolicy(), timeout: .seconds(5), bodyLimit: 4096,
                resolver: resolver)
            Issue.record("a name that resolves to loopback too was sent to")
        } catch let failure as EgressFailure {
            #expect(failure.final && failure.description == "refused: mixed.test: 127.0.0.1 is an address of this machine", "\(failure)")
        }
        #expect(receiver.accepted == 0)
    }

    /// A flood of 40 requests at once to receivers that never end their answers: the connections
    /// open at once never pass the budget (a request waits for room within its deadline), every
    /// request ends by its deadline, and none is left open.
    @Test func aFloodAgainstEndlessReceiversHoldsNoMoreConnectionsThanTheBudget() async throws {
        let both = HostileReceiver.Counts((0, 0, 0))
        let endless = try await HostileReceiver(.endless, counts: both)
        let dribbling = try await HostileReceiver(.dribble(every: .milliseconds(100)), counts: both)
        defer {
            Task {
                await endless.stop()
                await dribbling.stop()
            }
        }
        let budget = EgressBudget(limit: 4)
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<40 {
                group.addTask {
                    let port = index.isMultiple(of: 2) ? endless.port : dribbling.port
                    let answer = try? await EgressClient.send(
                        Self.post(port), policy: Self.loopback, timeout: .milliseconds(800), bodyLimit: 4096, budget: budget)
                    return answer?.truncated == true
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.count == 40)
        // The receivers see a connection end a moment after the client has closed it: the client's count is the truth.
        #expect(budget.most == 4 && both.value.accepted >= 4, "\(budget.most), \(both.value)")
        let endlessDrained = await endless.drained(within: 5)
        let dribblingDrained = await dribbling.drained(within: 5)
        #expect(endlessDrained && dribblingDrained)
        // A request whose caller timed out ends on its own a moment later: its slot comes back then.
        let end = ContinuousClock.now + .seconds(5)
        while budget.open > 0 && ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(20)) }
        #expect(budget.open == 0)
    }
}
