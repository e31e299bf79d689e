import Foundation
import Testing
import TeamworkModel
import TeamworkTestSupport

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
        await fast.forever(progress: { passes.mutate { $0 += 1 } }, failed: { ending, delay in
            delays.append(delay)
            switch ending {
            case .failed(let error): endings.append("failed \((error as? Broken)?.attempt ?? -1)")
            case .returned: endings.append("returned")
            }
        }) { progress in
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
        #expect(try await eventually(within: .seconds(10), every: .milliseconds(5)) { started.value && failures.value > 0 },
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
