import CentralStore
import Foundation
import Logging
import ServiceLifecycle
import TeamworkModel

/// Recurring work as a service: every `interval` (an hour by default, so a
/// day that begins in any zone is covered within the hour), and at once when
/// a plan changes (NOTIFY teamwork_plans), each active plan's occurrences are
/// made up to its horizon. Safe beside other instances and
/// the manager tool: each (plan, day) is made once (sql/functions/teamwork_generate_occurrences.sql).
/// A failed pass is retried with backoff and logged; a plan that cannot be made
/// is logged each pass and holds back no other.
struct PlanService: Service {
    let databaseURL: DatabaseURL
    let logger: Logger
    var interval: Duration
    var afterPass: @Sendable ([PlanGeneration]) -> Void

    init(
        databaseURL: DatabaseURL, logger: Logger, interval: Duration = .seconds(3_600),
        afterPass: @escaping @Sendable ([PlanGeneration]) -> Void = { _ in }
    ) {
        self.databaseURL = databaseURL
        self.logger = logger
        self.interval = interval
        self.afterPass = afterPass
    }

    func run() async throws {
        let (url, logger, interval, afterPass) = (databaseURL, logger, interval, afterPass)
        let changed = Locked(false)
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                // A plan changed by anyone: the next pass starts at once.
                group.addTask {
                    await CentralStore.listen(
                        on: CentralStore.plansChannel, at: url,
                        backoff: Backoff(initial: .milliseconds(100), maximum: .seconds(5)), logger: logger
                    ) { events in
                        for await event in events {
                            switch event {
                            case .listening:
                                // Changes made while not listening are looked at now, not in an hour.
                                changed.mutate { $0 = true }
                                logger.info("listening for plan changes")
                            case .notified:
                                changed.mutate { $0 = true }
                            case .lost(let ending, let delay):
                                if case .failed(let error) = ending {
                                    logger.warning(
                                        "plan notifications lost; listening again", metadata: ["error": "\(error)", "retry_in": "\(delay)"])
                                }
                            }
                        }
                    }
                }
                group.addTask {
                    await Retrying(Backoff(initial: .milliseconds(100), maximum: .seconds(5))).forever(failed: { ending, delay in
                        if case .failed(let error) = ending {
                            logger.error("plan generation failed; retrying", metadata: ["error": "\(error)", "retry_in": "\(delay)"])
                        }
                    }) { progress in
                        while !Task.isCancelled {
                            changed.mutate { $0 = false }
                            let results = try await CentralStore.withStore(url, queryDeadline: .seconds(60), logger: logger) {
                                try await $0.generatePlans()
                            }
                            for result in results {
                                if let error = result.error {
                                    logger.error(
                                        "a plan could not be generated", metadata: ["plan": "\(result.planID)", "error": "\(error)"])
                                } else if result.made > 0 {
                                    logger.info("plan occurrences made", metadata: ["plan": "\(result.planID)", "tasks": "\(result.made)"])
                                }
                            }
                            progress.made()
                            afterPass(results)
                            // Until the interval has passed or a plan changed.
                            let next = ContinuousClock.now + interval
                            while !changed.value, ContinuousClock.now < next {
                                try await Task.sleep(for: min(.milliseconds(250), next - ContinuousClock.now))
                            }
                        }
                    }
                }
            }
        }
    }
}
