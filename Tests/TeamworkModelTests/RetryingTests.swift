import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

/// The one retry loop every long-running part and the sync client go through.
@Suite("Retrying: one retry loop")
struct RetryingTests {
    struct Broken: Error, Equatable {
        var attempt: Int
    }

    @Test func failuresAreReportedWithDoublingWaitsAndProgressStartsTheWaitsOver() async {
        let fast = Retrying(Backoff(initial: .milliseconds(1), maximum: .milliseconds(4)))
        var attempts = 0
        var delays: [Duration] = []
        var endings: [String] = []
        let passes = Locked(0)
        await fast.forever(
            progress: { passes.mutate { $0 += 1 } },
            failed: { ending, delay in
                delays.append(delay)
                switch ending {
                case .failed(let error): endings.append("failed \((error as? Broken)?.attempt ?? -1)")
                case .returned: endings.append("returned")
                }
            }
        ) { progress in
            attempts += 1
            switch attempts {
            case 1, 2, 3, 4: throw Broken(attempt: attempts)
            case 5:
                progress.made()
                throw Broken(attempt: attempts)
            case 6: return
            default: throw Retrying.Stop()
            }
        }
        #expect(attempts == 7, "Stop ends the loop")
        #expect(endings == ["failed 1", "failed 2", "failed 3", "failed 4", "failed 5", "returned"])
        // 1, 2, 4, capped at 4; after an attempt that made progress, 1 again, then 2.
        #expect(delays == [.milliseconds(1), .milliseconds(2), .milliseconds(4), .milliseconds(4), .milliseconds(1), .milliseconds(2)])
        #expect(passes.value == 1, "the progress callback hears each unit of work")
    }

    @Test func cancellationEndsTheLoopInTheMiddleOfAWaitAndIsNeverReportedAsAFailure() async throws {
        let failures = Locked(0)
        let started = Locked(false)
        let loop = Task {
            await Retrying(Backoff(initial: .seconds(3600), maximum: .seconds(3600))).forever(failed: { _, _ in
                failures.mutate { $0 += 1 }
            }) { _ in
                started.mutate { $0 = true }
                throw Broken(attempt: 1)
            }
        }
        #expect(
            try await eventually(within: .seconds(10), every: .milliseconds(5)) { started.value && failures.value > 0 },
            "the first attempt failed and the loop is in its hour-long wait")
        loop.cancel()
        // An hour's wait that cancellation did not end would hold this test for an hour.
        await loop.value
        #expect(failures.value == 1)
    }

    @Test func boundedAttemptsRetryOnlyWhatIsRetryableAndThrowTheLastError() async throws {
        let fast = Retrying(Backoff(initial: .milliseconds(1), maximum: .milliseconds(2)))
        var tried: [Int] = []
        await #expect(throws: Broken(attempt: 3)) {
            try await fast.upTo(3, retryable: { $0 is Broken }) { number -> Int in
                tried.append(number)
                throw Broken(attempt: number)
            }
        }
        #expect(tried == [1, 2, 3])

        tried = []
        await #expect(throws: CocoaError(.fileNoSuchFile)) {
            try await fast.upTo(3, retryable: { $0 is Broken }) { number -> Int in
                tried.append(number)
                throw CocoaError(.fileNoSuchFile)
            }
        }
        #expect(tried == [1], "an error that is not retryable is thrown at once")

        let answer = try await fast.upTo(5, retryable: { _ in true }) { number -> Int in
            if number < 2 { throw Broken(attempt: number) }
            return number * 10
        }
        #expect(answer == 20)
    }
}

/// Full jitter for loops a fleet runs at once: the waits are pinned with a seeded random source.
@Suite("Backoff: full jitter")
struct BackoffJitterTests {
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    @Test func eachWaitLiesBetweenZeroAndItsDoublingLimitAndCoversIt() {
        // Many fresh clients, each drawing its first six waits: 1, 2, 4, 8, 8, 8 s limits.
        let limits = [1.0, 2, 4, 8, 8, 8]
        var draws = Array(repeating: [Double](), count: limits.count)
        var random = SplitMix(seed: 30)
        for _ in 0..<2_000 {
            var backoff = Backoff(initial: .seconds(1), maximum: .seconds(8), jitter: .full, random: SplitMix(seed: random.next()))
            for step in limits.indices { draws[step].append(Self.seconds(backoff.next())) }
        }
        for (step, limit) in limits.enumerated() {
            let waits = draws[step]
            #expect(waits.allSatisfy { $0 >= 0 && $0 <= limit }, "step \(step): within [0, \(limit)]")
            let mean = waits.reduce(0, +) / Double(waits.count)
            #expect(abs(mean - limit / 2) < limit * 0.05, "step \(step): uniform, mean \(mean) near \(limit / 2)")
            // Spread over the whole window: every tenth of it is hit by some client.
            let tenths = Set(waits.map { min(9, Int($0 / limit * 10)) })
            #expect(tenths.count == 10, "step \(step): \(tenths.sorted())")
        }
    }

    @Test func aFleetThatFailsTogetherRetriesSpreadOverTheWindowButWithoutJitterAllAtOnce() {
        // 1,000 devices lose the service at the same instant and retry as their backoff says.
        func firstRetries(_ jitter: Backoff.Jitter) -> [Double] {
            var seeds = SplitMix(seed: 42)
            return (0..<1_000).map { _ in
                var backoff = Backoff(initial: .seconds(1), maximum: .seconds(30), jitter: jitter, random: SplitMix(seed: seeds.next()))
                return Self.seconds(backoff.next())
            }
        }
        func busiestTenth(_ times: [Double]) -> Int {
            Dictionary(grouping: times) { Int($0 * 10) }.values.map(\.count).max() ?? 0
        }
        #expect(busiestTenth(firstRetries(.none)) == 1_000, "without jitter: every device in the same instant")
        let spread = busiestTenth(firstRetries(.full))
        #expect(spread < 150, "with full jitter: at most about a tenth in any 100 ms of the first second (\(spread))")
        // The same seed gives the same waits: the distribution is pinned, not left to chance.
        var a = Backoff(initial: .seconds(1), maximum: .seconds(30), jitter: .full, random: SplitMix(seed: 7))
        var b = Backoff(initial: .seconds(1), maximum: .seconds(30), jitter: .full, random: SplitMix(seed: 7))
        #expect((0..<8).map { _ in a.next() } == (0..<8).map { _ in b.next() })
    }

    @Test func resetStartsTheWindowOverAndTheMaximumCapsIt() {
        var backoff = Backoff(initial: .milliseconds(100), maximum: .milliseconds(400), jitter: .full, random: SplitMix(seed: 3))
        for _ in 0..<10 { #expect(backoff.next() <= .milliseconds(400)) }
        #expect(backoff.delay == .milliseconds(400))
        backoff.reset()
        #expect(backoff.next() <= .milliseconds(100))
    }
}
