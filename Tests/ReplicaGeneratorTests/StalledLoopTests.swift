import CentralStore
import Foundation
import LocalPostgres
import TeamworkModel
import TeamworkTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A loop that stops making progress shows: /health says which part stalled,
/// /metrics counts the seconds since its last pass, and systemd's watchdog
/// stops being fed, so systemd restarts the service. The generator's loop is
/// frozen through its test hook (TEAMWORK_TEST_FREEZE_GENERATOR), as a hung
/// loop would be, and thawed again.
@Suite("teamwork-service: a stalled loop is seen")
struct StalledLoopTests {
    /// A unix datagram socket standing in for systemd's notification socket.
    final class NotifySocket: @unchecked Sendable {
        let path: String
        let descriptor: Int32

        init(path: String) throws {
            self.path = path
            descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard descriptor >= 0, bound == 0 else { throw TeamworkError(.internal, "cannot bind \(path)") }
        }

        /// Every message waiting now.
        func drain() -> [String] {
            var messages: [String] = []
            var buffer = [UInt8](repeating: 0, count: 512)
            while true {
                let count = recv(descriptor, &buffer, buffer.count, 0)
                guard count > 0 else { return messages }
                messages.append(String(decoding: buffer[0..<count], as: UTF8.self))
            }
        }

        deinit {
            close(descriptor)
            unlink(path)
        }
    }

    @Test func aFrozenGeneratorTurnsHealthAndMetricsAndStopsTheWatchdogUntilItMovesAgain() async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "stall-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let notify = try NotifySocket(path: folder.path + "/notify.sock")
            let freeze = folder.path + "/freeze"
            let port = ServiceProcess.freePort()
            let service = ServiceProcess(
                [
                    "run", "--database-url", url.connectionString, "--replicas", folder.appending(path: "replicas").path,
                    "--port", String(port), "--sweep", "0.2", "--stall-after", "4",
                ],
                port: port, log: folder.path + "/service.log")
            service.environment = [
                "NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "600000", "WATCHDOG_PID": nil,
                "TEAMWORK_TEST_FREEZE_GENERATOR": freeze,
            ]
            try await service.start()
            defer { service.stopInBackground() }
            func health() async throws -> (status: Int, body: String) {
                let answer = try await LocalHTTP.request(port: port, "/health", timeout: .seconds(5))
                return (answer.status, answer.text)
            }
            func sinceProgress(_ part: String) async throws -> Int? {
                // Seen once in a full run: no answer within 5 s; the service's log says why if it happens again.
                let answer: LocalHTTP.Response
                do {
                    answer = try await LocalHTTP.request(port: port, "/metrics", timeout: .seconds(10))
                } catch {
                    let stacks = await service.threadStacks()
                    Issue.record("\(error); the service's log: \(service.logTail(4000))\nits threads:\n\(stacks)")
                    throw error
                }
                return answer.text.split(separator: "\n")
                    .first { $0.hasPrefix("teamwork_\(part)_seconds_since_progress ") }.flatMap { Int($0.split(separator: " ")[1]) }
            }

            // Working: ready once both parts have passed, and the watchdog is fed.
            var heard: [String] = []
            #expect(
                try await eventually(within: .seconds(20)) {
                    heard += notify.drain()
                    return heard.contains("READY=1") && heard.contains("WATCHDOG=1")
                }, "\(heard) \(service.logText)")
            #expect(try await health().status == 200)

            // Frozen: within the stall window /health names the generator, /metrics counts, the watchdog starves.
            _ = FileManager.default.createFile(atPath: freeze, contents: nil)
            var last = ""
            #expect(
                try await eventually(within: .seconds(15)) {
                    let (status, body) = try await health()
                    last = body
                    return status == 503 && body.contains("\"generator\":\"stalled\"")
                }, "\(last)")
            #expect(try await sinceProgress("generator") ?? 0 >= 4)
            #expect(try await sinceProgress("listener") ?? 99 < 2, "the listener goes on")
            #expect(try await sinceProgress("lease") ?? 99 < 2, "the leadership lease goes on")
            #expect(try await sinceProgress("watch") ?? 99 < 2, "the live-mode watch goes on")
            // The idle senders wait for NOTIFY teamwork_outbox, and look four times in the window anyway (every 1 s).
            #expect(try await sinceProgress("webhooks") ?? 99 < 3, "the idle webhook sender goes on within its window")
            #expect(try await sinceProgress("messages") ?? 99 < 3, "the idle message sender goes on within its window")
            // The watchdog looks on its own beat (every 0.3 s): a look just before the window ended may
            // still be feeding, late on a busy machine (seen in a full run: a WATCHDOG=1 sent after /health
            // said 503). Once it has said it stopped, no look of its while the generator is frozen feeds it.
            if try await !eventually(within: .seconds(10), { service.logText.contains("not feeding systemd's watchdog") }) {
                let now = try await health().body
                Issue.record("the watchdog did not say it stopped; /health: \(now)\nthe log: \(service.logTail(3000))")
            }
            _ = notify.drain()
            // An absence is seen over time only: seven watchdog periods (0.3 s each) with no WATCHDOG=1.
            try await Task.sleep(for: .seconds(2))
            let fed = notify.drain().contains("WATCHDOG=1")
            let stalledHealth = try await health().body
            #expect(!fed, "no WATCHDOG=1 while the generator is stalled; /health: \(stalledHealth)\nthe log: \(service.logTail(3000))")

            // Thawed: fed again, healthy again.
            try FileManager.default.removeItem(atPath: freeze)
            #expect(
                try await eventually(within: .seconds(15)) {
                    try await health().status == 200 && notify.drain().contains("WATCHDOG=1")
                }, "\(service.logTail(2000))")
            #expect(try await service.stop() == 0)
            #expect(notify.drain().contains("STOPPING=1"))
        }
    }
}
