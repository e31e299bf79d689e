import Foundation
import TeamworkModel
import TeamworkTestSupport

/// Devices watching the way `teamwork-worker watch` does: a live-mode wait, then the next; after
/// a failure, a full-jitter backoff from 1 s doubling to 30 s (the device's own `Backoff`). Counts
/// the devices waiting on the service now (by `teamwork_sync_open_waits`) and why requests failed.
final class RestartStorm: @unchecked Sendable {
    let port: Int
    let devices: [(token: String, path: String)]
    private let failed = Locked<[String: Int]>([:])
    private var tasks: [Task<Void, Never>] = []

    init(port: Int, devices: [(token: String, path: String)]) {
        self.port = port
        self.devices = devices
    }

    func start() {
        tasks = devices.enumerated().map { index, device in
            Task { [port, failed] in
                var backoff = Backoff(initial: .seconds(1), maximum: .seconds(30), jitter: .full, random: SplitMix(seed: UInt64(index + 1)))
                while !Task.isCancelled {
                    do {
                        _ = try await LoadBenchmark.get(port: port, device.path + "&wait=20", token: device.token)
                        backoff.reset()
                    } catch {
                        if Task.isCancelled { return }
                        failed.mutate { $0[LoadBenchmark.cause(error), default: 0] += 1 }
                        try? await backoff.wait()
                    }
                }
            }
        }
    }

    func stop() { tasks.forEach { $0.cancel() } }

    func failures() -> [String: Int] { failed.value }

    /// Waits until the service holds `count` waits (or the limit passes): how many it held, and when.
    func waitForWaiting(_ count: Int, within limit: Duration) async throws -> (count: Int, seconds: Double) {
        let started = ContinuousClock.now
        var waiting = 0
        while ContinuousClock.now - started < limit {
            waiting = (try? await LocalHTTP.metric("teamwork_sync_open_waits", port: port, timeout: .seconds(5))) ?? waiting
            if waiting >= count { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return (waiting, UploadBenchmark.seconds(ContinuousClock.now - started))
    }
}
